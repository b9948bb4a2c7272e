// Shape arithmetic with unknown dimensions.
#include "paddlec/core/dims.h"

namespace paddlec {

int64_t Dims::Numel() const { return Product(0, rank_); }

int64_t Dims::Product(int from, int to) const {
  int64_t n = 1;
  for (int i = from; i < to; ++i) {
    if (d_[i] < 0) return kUnknownDim;
    n *= d_[i];
  }
  return n;
}

std::string Dims::ToString() const {
  std::string s = "[";
  for (int i = 0; i < rank_; ++i) {
    if (i) s += ", ";
    s += std::to_string(d_[i]);
  }
  return s + "]";
}

bool DimsMatch(const Dims& a, const Dims& b) {
  if (a.rank() != b.rank()) return false;
  for (int i = 0; i < a.rank(); ++i)
    if (!DimMatch(a[i], b[i])) return false;
  return true;
}

int NormalizeAxis(int axis, int rank) {
  if (axis < 0) axis += rank;
  return (axis < 0 || axis >= rank) ? -1 : axis;
}

Status CheckDims(const Dims& d) {
  int64_t n = 1;
  for (int i = 0; i < d.rank(); ++i) {
    int64_t v = d[i];
    if (v < kUnknownDim)
      return MakeError(ErrorCode::kShape, "dimension {} of {} is negative", i, d.ToString());
    if (v < 0) continue;
    if (v != 0 && n > kMaxNumel / v)
      return MakeError(ErrorCode::kResourceExhausted,
                       "shape {} has more than 2^40 elements, the most paddlec supports", d.ToString());
    n *= v;
  }
  return Status::OK();
}

int64_t WindowOutputSize(int64_t in, int64_t kernel, int64_t pad_before, int64_t pad_after,
                         int64_t stride, int64_t dilation, bool ceil_mode) {
  if (in < 0) return kUnknownDim;
  int64_t effective = dilation * (kernel - 1) + 1;
  int64_t span = in + pad_before + pad_after - effective;
  if (span < 0 || stride <= 0) return -2;
  return (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
}

}  // namespace paddlec
