// The sequence ops' slots, decoded attributes and LoD geometry, shared by their shape functions and
// CPU kernels (sequence.cc) and their CUDA kernels (sequence_cuda.cc).
//
// A sequence batch is a tensor whose rows are split into sequences by the last level of its LoD
// (offsets [0, o1, ..., N]); every op here works on that level, seeing X as [N, width] rows.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "paddlec/ops/op_registry.h"

namespace paddlec::ops::sequence {

// ---- sequence_pool ---------------------------------------------------------------------------
namespace pool {
inline constexpr InSlot kX{0, "X"};
inline constexpr OutSlot kOut{0, "Out"};
inline constexpr OutSlot kMaxIndex{1, "MaxIndex"};
// sequence_pool_grad: (X, MaxIndex, Out@GRAD) -> X@GRAD.
inline constexpr InSlot kGradMaxIndex{1, "MaxIndex"};
inline constexpr InSlot kGradDOut{2, "Out@GRAD"};
inline constexpr OutSlot kDX{0, "X@GRAD"};
}  // namespace pool

enum class PoolType { kSum, kAverage, kSqrt, kMax, kFirst, kLast };

struct PoolAttrs {
  PoolType type = PoolType::kAverage;
  float pad_value = 0;
  static PoolAttrs Decode(const AttrReader& a) {
    const std::string t = a.Get<std::string>("pooltype");
    PoolType p = t == "SUM"     ? PoolType::kSum
                 : t == "SQRT"  ? PoolType::kSqrt
                 : t == "MAX"   ? PoolType::kMax
                 : t == "FIRST" ? PoolType::kFirst
                 : t == "LAST"  ? PoolType::kLast
                                : PoolType::kAverage;
    return {p, a.Get<float>("pad_value")};
  }
  /// The factor a sum over `len` rows is scaled by (SUM, AVERAGE, SQRT); every row's gradient too.
  double Scale(int64_t len) const {
    if (len == 0) return 0;
    if (type == PoolType::kAverage) return 1.0 / static_cast<double>(len);
    if (type == PoolType::kSqrt) return 1.0 / std::sqrt(static_cast<double>(len));
    return 1.0;
  }
};

// ---- sequence_softmax ------------------------------------------------------------------------
namespace softmax {
inline constexpr InSlot kX{0, "X"};
inline constexpr OutSlot kOut{0, "Out"};
// sequence_softmax_grad: (Out, Out@GRAD, X) -> X@GRAD (X only gives the LoD).
inline constexpr InSlot kGradOut{0, "Out"};
inline constexpr InSlot kGradDOut{1, "Out@GRAD"};
inline constexpr InSlot kGradX{2, "X"};
inline constexpr OutSlot kDX{0, "X@GRAD"};
}  // namespace softmax

// ---- sequence_expand -------------------------------------------------------------------------
namespace expand {
inline constexpr InSlot kX{0, "X"};
inline constexpr InSlot kY{1, "Y"};
inline constexpr OutSlot kOut{0, "Out"};
// sequence_expand_grad: (X, Y, Out@GRAD) -> X@GRAD.
inline constexpr InSlot kGradDOut{2, "Out@GRAD"};
inline constexpr OutSlot kDX{0, "X@GRAD"};
}  // namespace expand

struct ExpandAttrs {
  int ref_level = -1;
  static ExpandAttrs Decode(const AttrReader& a) { return {a.Get<int>("ref_level")}; }
};

// ---- sequence_pad / sequence_unpad -----------------------------------------------------------
namespace pad {
inline constexpr InSlot kX{0, "X"};
inline constexpr InSlot kPadValue{1, "PadValue"};
inline constexpr OutSlot kOut{0, "Out"};
inline constexpr OutSlot kLength{1, "Length"};
// sequence_pad_grad: (X, Out@GRAD) -> X@GRAD.
inline constexpr InSlot kGradDOut{1, "Out@GRAD"};
inline constexpr OutSlot kDX{0, "X@GRAD"};
}  // namespace pad

struct PadAttrs {
  int padded_length = -1;
  static PadAttrs Decode(const AttrReader& a) { return {a.Get<int>("padded_length")}; }
};

namespace unpad {
inline constexpr InSlot kX{0, "X"};
inline constexpr InSlot kLength{1, "Length"};
inline constexpr OutSlot kOut{0, "Out"};
// sequence_unpad_grad: (X, Length, Out@GRAD) -> X@GRAD.
inline constexpr InSlot kGradDOut{2, "Out@GRAD"};
inline constexpr OutSlot kDX{0, "X@GRAD"};
}  // namespace unpad

// ---- sequence_reverse ------------------------------------------------------------------------
namespace reverse {
inline constexpr InSlot kX{0, "X"};
inline constexpr OutSlot kY{0, "Y"};
// sequence_reverse_grad: (X, Y@GRAD) -> X@GRAD (X only gives the LoD).
inline constexpr InSlot kGradDY{1, "Y@GRAD"};
inline constexpr OutSlot kDX{0, "X@GRAD"};
}  // namespace reverse

// ---- sequence_mask ---------------------------------------------------------------------------
namespace mask {
inline constexpr InSlot kX{0, "X"};
inline constexpr InSlot kMaxLenTensor{1, "MaxLenTensor"};
inline constexpr OutSlot kY{0, "Y"};
}  // namespace mask

struct MaskAttrs {
  int maxlen = -1;
  int out_dtype = 3;  // VarType.INT64
  static MaskAttrs Decode(const AttrReader& a) { return {a.Get<int>("maxlen"), a.Get<int>("out_dtype")}; }
};

// ---- geometry --------------------------------------------------------------------------------

/// The last LoD level of X (the sequences its rows form), or an error naming the op and slot.
inline StatusOr<const std::vector<uint64_t>*> Sequences(const Tensor& x, std::string_view op, std::string_view slot) {
  if (x.lod().empty())
    return MakeError(ErrorCode::kRuntime, "{}: {} has no LoD, but {} works on a batch of sequences", op, slot, op)
        .Note("feed it with its LoD: (array, [[0, 2, 5]]) from Python, --lod NAME=0,2,5 from the CLI");
  const auto& level = x.lod().back();
  const int64_t rows = x.dims().rank() ? x.dims()[0] : 0;
  if (static_cast<int64_t>(level.back()) != rows)
    return MakeError(ErrorCode::kRuntime, "{}: the LoD of {} ends at {} but it has {} rows", op, slot, level.back(),
                     rows);
  return &level;
}

/// Elements per row of X (the product of its dims after the first).
inline int64_t RowWidth(const Dims& x) { return x.rank() > 1 ? x.Product(1, x.rank()) : 1; }

/// X's dims with the first replaced by `rows`.
inline Dims WithRows(const Dims& x, int64_t rows) {
  Dims d = x;
  if (d.rank() == 0)
    d.push_back(rows);
  else
    d[0] = rows;
  return d;
}

/// The LoD of X without its last level (what a pooled batch keeps).
inline runtime::LoD OuterLoD(const runtime::LoD& lod) {
  return lod.empty() ? lod : runtime::LoD(lod.begin(), lod.end() - 1);
}

/// sequence_pad's geometry: the sequences of X, the padded length (padded_length, or the longest
/// sequence when it is -1) and Out's dims [sequences, length, row dims of X...].
/// sequence_pool before it computes, on either device: X's sequences, and Out (and MaxIndex, when
/// asked for) sized to one row per sequence.
struct PoolPlan {
  const std::vector<uint64_t>* seq = nullptr;
  int64_t sequences = 0, width = 0;
  Tensor* index = nullptr;  // MaxIndex, or null
};

inline StatusOr<PoolPlan> PlanPool(KernelContext& ctx) {
  const Tensor& x = ctx.In(pool::kX);
  PoolPlan p;
  PC_ASSIGN_OR_RETURN(p.seq, Sequences(x, "sequence_pool", "X"));
  p.sequences = static_cast<int64_t>(p.seq->size()) - 1;
  p.width = RowWidth(x.dims());
  PC_RETURN_IF_ERROR(ctx.ResizeOut(pool::kOut, WithRows(x.dims(), p.sequences), x.dtype()));
  p.index = ctx.OutOpt(pool::kMaxIndex);
  if (p.index != nullptr)
    PC_RETURN_IF_ERROR(ctx.ResizeOut(pool::kMaxIndex, WithRows(x.dims(), p.sequences), DType::kInt32));
  return p;
}

struct PadPlan {
  const std::vector<uint64_t>* seq = nullptr;
  int64_t sequences = 0, length = 0, width = 0;
  Dims out;
};

inline StatusOr<PadPlan> PlanPad(const Tensor& x, const Tensor& pad_value, const PadAttrs& a) {
  PadPlan p;
  PC_ASSIGN_OR_RETURN(p.seq, Sequences(x, "sequence_pad", "X"));
  p.sequences = static_cast<int64_t>(p.seq->size()) - 1;
  p.width = RowWidth(x.dims());
  int64_t longest = 0;
  for (int64_t s = 0; s < p.sequences; ++s) longest = std::max<int64_t>(longest, (*p.seq)[s + 1] - (*p.seq)[s]);
  if (a.padded_length >= 0 && a.padded_length < longest)
    return MakeError(ErrorCode::kRuntime, "sequence_pad: padded_length {} is shorter than the longest sequence ({})",
                     a.padded_length, longest);
  p.length = a.padded_length < 0 ? longest : static_cast<int64_t>(a.padded_length);
  if (pad_value.numel() != 1 && pad_value.numel() != p.width)
    return MakeError(ErrorCode::kRuntime, "sequence_pad: PadValue has {} elements but must have 1 or {} (a row of X)",
                     pad_value.numel(), p.width);
  p.out = Dims{p.sequences, p.length};
  for (int d = 1; d < x.dims().rank(); ++d) p.out.push_back(x.dims()[d]);
  return p;
}

/// The row offsets after sequence_expand: sequence (or row) i of X repeated `Y's ref level` times.
struct ExpandPlan {
  std::vector<uint64_t> x_offsets;    // sequences of X (rows when X has no LoD)
  std::vector<int64_t> repeats;       // copies of each
  std::vector<uint64_t> out_offsets;  // start row of every copy in Out (size copies + 1)
  std::vector<int64_t> source;        // X sequence of every copy
  runtime::LoD out_lod;
  int64_t out_rows = 0;
};

inline StatusOr<ExpandPlan> PlanExpand(const Tensor& x, const Tensor& y, const ExpandAttrs& a) {
  if (y.lod().empty())
    return MakeError(ErrorCode::kRuntime, "sequence_expand: Y has no LoD: it says how often to repeat X")
        .Note("feed Y with its LoD (--lod Y=0,2,5 / (array, [[0, 2, 5]]))");
  const int levels = static_cast<int>(y.lod().size());
  const int ref = a.ref_level < 0 ? levels - 1 : a.ref_level;
  if (ref >= levels)
    return MakeError(ErrorCode::kRuntime, "sequence_expand: ref_level {} but Y has {} LoD level(s)", a.ref_level,
                     levels);
  if (x.lod().size() > 1)
    return MakeError(ErrorCode::kUnimplemented, "sequence_expand: X has {} LoD levels; at most 1 is supported",
                     x.lod().size());
  ExpandPlan p;
  const int64_t x_rows = x.dims().rank() ? x.dims()[0] : 0;
  if (x.lod().empty()) {
    for (int64_t i = 0; i <= x_rows; ++i) p.x_offsets.push_back(static_cast<uint64_t>(i));
  } else {
    p.x_offsets = x.lod()[0];
  }
  const auto& r = y.lod()[ref];
  const int64_t n = static_cast<int64_t>(p.x_offsets.size()) - 1;
  if (static_cast<int64_t>(r.size()) - 1 != n)
    return MakeError(ErrorCode::kRuntime,
                     "sequence_expand: X has {} {} but level {} of Y's LoD has {} sequences: they must match", n,
                     x.lod().empty() ? "rows" : "sequences", ref, r.size() - 1);
  p.out_offsets.push_back(0);
  std::vector<uint64_t> groups{0};
  for (int64_t i = 0; i < n; ++i) {
    const int64_t rep = static_cast<int64_t>(r[i + 1] - r[i]);
    const uint64_t len = p.x_offsets[i + 1] - p.x_offsets[i];
    p.repeats.push_back(rep);
    for (int64_t k = 0; k < rep; ++k) {
      p.source.push_back(i);
      p.out_offsets.push_back(p.out_offsets.back() + len);
    }
    groups.push_back(groups.back() + static_cast<uint64_t>(rep));
  }
  p.out_rows = static_cast<int64_t>(p.out_offsets.back());
  // Each copy of a sequence of X is a sequence of Out; rows of a plain X group by Y's sequences.
  p.out_lod = x.lod().empty() ? runtime::LoD{groups} : runtime::LoD{p.out_offsets};
  return p;
}

}  // namespace paddlec::ops::sequence
