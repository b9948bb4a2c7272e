// Tensor: dtype + dims + place + a shared buffer (+ LoD kept as metadata).
//
// Dims and dtype are set by shape inference; Allocate() then makes sure the buffer can hold them,
// reusing the existing one when it is large enough and not shared, so a plan whose shapes do not
// change never allocates after its first step.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "paddlec/core/dims.h"
#include "paddlec/core/dtype.h"
#include "paddlec/core/place.h"
#include "paddlec/runtime/allocator.h"

namespace paddlec::runtime {

/// Level-of-detail offsets (PaddlePaddle's sequence metadata): level k holds offsets into level k+1
/// (the last level into the tensor's rows); each level starts at 0 and never decreases.
using LoD = std::vector<std::vector<uint64_t>>;

/// What is wrong with `lod` for a tensor of `rows` rows ("level 1 ends at 4 but the tensor has 5
/// rows"); empty when nothing is. Implemented in src/runtime/lod.cc.
std::string LoDProblem(const LoD& lod, int64_t rows);

class Tensor {
 public:
  Tensor() = default;
  Tensor(DType dtype, const Dims& dims) : dtype_(dtype) { set_dims(dims); }

  DType dtype() const { return dtype_; }
  const Dims& dims() const { return dims_; }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * SizeOf(dtype_); }
  Place place() const { return buffer_ ? buffer_->place() : Place::CPU(); }
  const LoD& lod() const { return lod_; }
  LoD& mutable_lod() { return lod_; }

  /// SelectedRows (PaddlePaddle's sparse gradient): when set, this tensor holds only the rows
  /// `rows()[i]` of a `height()`-row table, one per leading index, in that order (duplicates allowed;
  /// they add). Row indices stay on the host; a CUDA kernel copies the few it needs.
  bool is_selected_rows() const { return height_ >= 0; }
  const std::vector<int64_t>& rows() const { return rows_; }
  int64_t height() const { return height_; }
  void SetSelectedRows(std::vector<int64_t> rows, int64_t height) {
    rows_ = std::move(rows);
    height_ = height;
  }
  void ClearSelectedRows() {
    rows_.clear();
    height_ = -1;
  }

  void set_dtype(DType t) { dtype_ = t; }
  /// Sets the shape. Unknown (-1) dims count as 0 elements.
  void set_dims(const Dims& d);
  void Set(DType t, const Dims& d) {
    dtype_ = t;
    set_dims(d);
  }

  /// True when the tensor has memory for its current shape.
  bool initialized() const { return buffer_ != nullptr && buffer_->size() >= offset_ + nbytes(); }
  /// Ensures memory for dims x dtype on `alloc`'s place; keeps the current buffer when it fits, is on
  /// that place and no other tensor shares it.
  Status Allocate(Allocator& alloc);

  template <class T>
  T* data() {
    return reinterpret_cast<T*>(raw_data());
  }
  template <class T>
  const T* data() const {
    return reinterpret_cast<const T*>(raw_data());
  }
  /// Non-const access counts as a write: it changes the buffer's content stamp.
  void* raw_data() {
    if (!buffer_) return nullptr;
    buffer_->Touch();
    return static_cast<char*>(buffer_->data()) + offset_;
  }
  const void* raw_data() const { return buffer_ ? static_cast<const char*>(buffer_->data()) + offset_ : nullptr; }
  /// The buffer's content stamp (Buffer::Stamp): unchanged while nothing writes this tensor's memory
  /// (or any alias of it); 0 when unknown.
  uint64_t stamp() const { return buffer_ ? buffer_->Stamp() : 0; }

  /// Makes this tensor an alias of `other`'s memory (same dtype, its own dims), as reshape does.
  void ShareBufferWith(const Tensor& other) {
    buffer_ = other.buffer_;
    offset_ = other.offset_;
  }
  const std::shared_ptr<Buffer>& buffer() const { return buffer_; }
  void set_buffer(std::shared_ptr<Buffer> b, size_t offset = 0) {
    buffer_ = std::move(b);
    offset_ = offset;
  }
  void Reset() {
    buffer_.reset();
    offset_ = 0;
  }

 private:
  DType dtype_ = DType::kFloat32;
  Dims dims_;
  int64_t numel_ = 0;
  std::shared_ptr<Buffer> buffer_;
  size_t offset_ = 0;
  LoD lod_;
  std::vector<int64_t> rows_;
  int64_t height_ = -1;  // >= 0: a SelectedRows
};

}  // namespace paddlec::runtime
