// Datasets for `paddlec train`: IDX files (the MNIST family's format) and the image/label
// classification dataset built from them, with seeded shuffling and normalization.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "paddlec/core/error.h"

namespace paddlec::io {

/// An IDX array of unsigned bytes (the only element type the MNIST family uses).
struct IdxArray {
  std::vector<int64_t> dims;
  std::vector<uint8_t> data;
};

/// Reads an IDX file, gzip-compressed (zlib) or plain; sizes are checked against the header and
/// the header against sane limits before anything is allocated. Errors name the file.
StatusOr<IdxArray> ReadIdx(const std::string& path);

enum class Normalization {
  kUnit,     // pixel / 255, in [0, 1]
  kMeanStd,  // (pixel / 255 - mean) / std over the training images
};

/// Images as float32 rows of H*W values, labels as int64.
struct ClassificationSet {
  int64_t count = 0, height = 0, width = 0;
  std::vector<float> images;
  std::vector<int64_t> labels;
  float blank = 0;    // what a pixel without ink (0) is after normalization
  float half = 0.5f;  // what a pixel of half intensity (127.5) is after normalization
  int64_t num_classes() const;
  /// Rows of image `i` up to its last row with ink (at least 1): its length read as a sequence of rows.
  int64_t InkedRows(int64_t i) const;
  /// Appends the bag of words of image `i` to `ids`: one id in [0, vocab) per 4x4 patch with a pixel
  /// above half intensity, hashed from the patch's binarized pixels and its place (configs/sparse_bow.py
  /// computes the same ids in NumPy).
  void AppendPatternIds(int64_t i, int64_t vocab, std::vector<int64_t>& ids) const;
};

struct ImageDataset {
  ClassificationSet train, test;
};

/// Loads `<dir>/{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]` (Fashion-MNIST / MNIST layout).
StatusOr<ImageDataset> LoadImageDataset(const std::string& dir, Normalization norm = Normalization::kUnit);

/// The sample order of epoch `epoch`: a Fisher-Yates shuffle seeded by (seed, epoch), so a resumed
/// run sees exactly the order an uninterrupted one does.
std::vector<int64_t> EpochOrder(int64_t count, uint64_t seed, int64_t epoch);

}  // namespace paddlec::io
