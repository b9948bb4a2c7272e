// Shape-changing ops: reshape2, flatten_contiguous_range, squeeze2, unsqueeze2, transpose2 and
// their gradients, and `shape` (X's dims as an int32 tensor).
//
// reshape2, flatten, squeeze2 and unsqueeze2 copy X into Out instead of aliasing its buffer: the runtime has no alias
// analysis yet, so an alias would turn every later in-place writer of Out (ParamOut = Param updates,
// in-place scale or allreduce, gradient accumulation) into a hidden writer of X, and a shared buffer
// also defeats Tensor::Allocate's reuse when shapes are re-inferred. The copy is a parallel memcpy.
// Each op also writes XShape = [0] + X.dims (PaddlePaddle's convention), a zero-element tensor that
// carries X's shape to the gradient without keeping X alive.
//
// transpose2 first coalesces the permutation (drops size-1 axes, merges input axes that stay
// adjacent), then picks a kernel: one memcpy (identity), contiguous row copies (the last axis stays
// last), or else a batch of tiled 2-D transposes between the input's last axis and the output's
// last axis (NCHW <-> NHWC after merging H and W, plain matrix transposes, any other permutation),
// so both the reads and the writes stay contiguous within each tile.
#include <array>

#include "tensor/tensor_internal.h"

namespace paddlec::ops {
namespace {

using tensor_internal::CopyBytes;
using tensor_internal::DimsFromXShape;
using tensor_internal::ForEachDType;
using tensor_internal::XShapeOf;

constexpr InSlot kX{0, "X"};
constexpr OutSlot kOut{0, "Out"};
constexpr OutSlot kXShape{1, "XShape"};
// reshape2's tensor-valued shape inputs.
constexpr InSlot kShape{1, "Shape"};
constexpr InSlot kShapeTensor{2, "ShapeTensor"};
// unsqueeze2's tensor-valued axes.
constexpr InSlot kAxesTensor{1, "AxesTensor"};
constexpr InSlot kAxesTensorList{2, "AxesTensorList"};
// Gradient ops: (XShape, Out@GRAD) -> X@GRAD; squeeze2_grad and unsqueeze2_grad also take X.
constexpr InSlot kXShapeIn{0, "XShape"};
constexpr InSlot kDOut{1, "Out@GRAD"};
constexpr InSlot kXForGrad{2, "X"};
constexpr InSlot kGradAxesTensor{3, "AxesTensor"};  // unsqueeze2_grad only
constexpr InSlot kGradAxesTensorList{4, "AxesTensorList"};
constexpr OutSlot kDX{0, "X@GRAD"};

Status SetOutAndXShape(InferShapeContext& ctx, const Dims& x, const Dims& out) {
  if (x.rank() >= kMaxRank)
    return ctx.Fail("X has shape {} of rank {}: XShape needs rank + 1 <= {}", x.ToString(), x.rank(), kMaxRank);
  DType t = ctx.InputDType(kX);
  ctx.SetOutput(kOut, out, t);
  ctx.SetOutput(kXShape, XShapeOf(x), t);
  return Status::OK();
}

/// X@GRAD gets X's dims; Out@GRAD, whose elements the gradient kernels move into it, must hold as
/// many (when both are known).
Status SetGradLikeX(InferShapeContext& ctx, const Dims& x) {
  const Dims dout = ctx.InputDims(kDOut);
  if (dout.Numel() >= 0 && x.Numel() >= 0 && dout.Numel() != x.Numel())
    return ctx.Fail("Out@GRAD has shape {} ({} elements) but X has shape {} ({} elements)", dout.ToString(),
                    dout.Numel(), x.ToString(), x.Numel());
  if (ctx.HasOutput(kDX)) ctx.SetOutput(kDX, x, ctx.InputDType(kDOut));
  return Status::OK();
}

/// X@GRAD takes the shape recorded in XShape and the dtype of Out@GRAD.
Status InferGradFromXShape(InferShapeContext& ctx) {
  Dims xshape = ctx.InputDims(kXShapeIn);
  if (xshape.rank() < 1 || xshape[0] != 0)
    return ctx.Fail("XShape has shape {}, which is not an XShape ([0] followed by X's dims)", xshape.ToString());
  return SetGradLikeX(ctx, DimsFromXShape(xshape));
}

/// The default gradient, after checking the forward op kept the XShape its gradient reads.
Status XShapeGradMaker(GradMakerContext& ctx) {
  if (ctx.Output("XShape").empty())
    return MakeError(ErrorCode::kValidation,
                     "{} has no XShape output, which its gradient needs to recover X's shape: bind XShape",
                     ctx.forward().type());
  return DefaultGradMaker(ctx);
}

/// Copies X into Out (reshape, flatten) or Out@GRAD into X@GRAD (their gradients): same bytes, new dims.
Status CopyForwardCpu(KernelContext& ctx) {
  const Tensor& x = ctx.In(kX);
  CopyBytes(ctx.Out(kOut).raw_data(), x.raw_data(), x.nbytes());
  return Status::OK();
}

Status CopyGradCpu(KernelContext& ctx) {
  Tensor* dx = ctx.OutOpt(kDX);
  if (dx == nullptr) return Status::OK();
  const Tensor& dout = ctx.In(kDOut);
  CopyBytes(dx->raw_data(), dout.raw_data(), dout.nbytes());
  return Status::OK();
}

// ---- reshape2 -------------------------------------------------------------------------------

/// Out's dims for reshape with unknowns: a 0 copies X's dim at the same index, so copied dims cancel
/// from both sides and an unknown batch copied by 0 still lets the -1 be inferred ([-1, 3, 4] with
/// [0, -1] gives [-1, 12]).
StatusOr<Dims> ReshapeDims(InferShapeContext& ctx, const Dims& x, const std::vector<int>& shape) {
  auto shape_str = [&] {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
  };
  if (static_cast<int>(shape.size()) > kMaxRank)
    return ctx.Fail("shape {} has rank {}, more than the maximum of {}", shape_str(), shape.size(), kMaxRank);
  Dims out;
  int infer = -1;
  for (int i = 0; i < static_cast<int>(shape.size()); ++i) {
    int s = shape[i];
    if (s < -1)
      return ctx.Fail(
          "shape {} has invalid entry {} at index {}: entries must be positive, 0 (copy X's dimension) or -1 (infer)",
          shape_str(), s, i);
    if (s == -1) {
      if (infer >= 0) return ctx.Fail("shape {} has more than one -1: only one dimension can be inferred", shape_str());
      infer = i;
    }
    if (s == 0 && i >= x.rank())
      return ctx.Fail("shape {} has 0 at index {}, which copies a dimension of X, but X has shape {} (rank {})",
                      shape_str(), i, x.ToString(), x.rank());
    out.push_back(s == 0 ? x[i] : s);
  }
  auto copied = [&](int i) { return i < static_cast<int>(shape.size()) && shape[i] == 0; };
  int64_t known_in = 1, known_out = 1;
  bool unknown_in = false, any_copied = false;
  for (int j = 0; j < x.rank(); ++j) {
    if (copied(j)) {
      any_copied = true;
    } else if (x[j] < 0) {
      unknown_in = true;
    } else {
      known_in *= x[j];
    }
  }
  for (int i = 0; i < out.rank(); ++i)
    if (i != infer && !copied(i)) known_out *= out[i];
  if (unknown_in) {
    if (infer >= 0) out[infer] = kUnknownDim;
    return out;
  }
  if (infer >= 0) {
    // known_out >= 1: entries that are not copies are positive.
    if (known_in % known_out != 0) {
      if (any_copied)
        return ctx.Fail(
            "cannot reshape X of shape {} to shape {}: the dimensions not copied by 0 hold {} elements, which is not "
            "divisible by {}",
            x.ToString(), shape_str(), known_in, known_out);
      return ctx.Fail("cannot reshape X of shape {} ({} elements) to shape {}: {} is not divisible by {}", x.ToString(),
                      known_in, shape_str(), known_in, known_out);
    }
    out[infer] = known_in / known_out;
  } else if (known_in != known_out) {
    if (any_copied)
      return ctx.Fail(
          "cannot reshape X of shape {} to shape {}: the dimensions not copied by 0 hold {} elements but the shape "
          "asks for {}",
          x.ToString(), shape_str(), known_in, known_out);
    return ctx.Fail("cannot reshape X of shape {} ({} elements) to shape {} ({} elements)", x.ToString(), known_in,
                    shape_str(), known_out);
  }
  return out;
}

Status InferReshape2(InferShapeContext& ctx) {
  PC_RETURN_IF_ERROR(tensor_internal::RejectTensorInput(ctx, kShape, "shape"));
  PC_RETURN_IF_ERROR(tensor_internal::RejectTensorInput(ctx, kShapeTensor, "shape"));
  Dims x = ctx.InputDims(kX);
  PC_ASSIGN_OR_RETURN(Dims out, ReshapeDims(ctx, x, ctx.Attr<std::vector<int>>("shape")));
  return SetOutAndXShape(ctx, x, out);
}

// ---- flatten_contiguous_range ---------------------------------------------------------------

Status InferFlatten(InferShapeContext& ctx) {
  Dims x = ctx.InputDims(kX);
  int start = ctx.Attr<int>("start_axis"), stop = ctx.Attr<int>("stop_axis");
  if (x.rank() == 0) return SetOutAndXShape(ctx, x, Dims{1});  // a 0-D tensor flattens to [1]
  int s = NormalizeAxis(start, x.rank()), e = NormalizeAxis(stop, x.rank());
  if (s < 0)
    return ctx.Fail("start_axis {} is out of range for X of shape {} (rank {})", start, x.ToString(), x.rank());
  if (e < 0) return ctx.Fail("stop_axis {} is out of range for X of shape {} (rank {})", stop, x.ToString(), x.rank());
  if (s > e) return ctx.Fail("start_axis {} comes after stop_axis {} for X of shape {}", start, stop, x.ToString());
  Dims out;
  for (int i = 0; i < s; ++i) out.push_back(x[i]);
  out.push_back(x.Product(s, e + 1));
  for (int i = e + 1; i < x.rank(); ++i) out.push_back(x[i]);
  return SetOutAndXShape(ctx, x, out);
}

// ---- squeeze2 / unsqueeze2 ------------------------------------------------------------------

/// PaddlePaddle's squeeze rule: without `axes`, every dimension of size 1 goes; otherwise the
/// listed axes go when their size is 1 (or unknown: PaddlePaddle assumes 1 at compile time) and
/// stay, silently, when it is not.
Status InferSqueeze2(InferShapeContext& ctx) {
  Dims x = ctx.InputDims(kX);
  auto axes = ctx.Attr<std::vector<int>>("axes");
  std::array<bool, kMaxRank> drop{};
  if (axes.empty()) {
    for (int i = 0; i < x.rank(); ++i) drop[i] = x[i] == 1;
  } else {
    for (int a : axes) {
      if (x.rank() == 0 && (a == 0 || a == -1)) continue;  // a 0-D X squeezes to itself
      const int i = NormalizeAxis(a, x.rank());
      if (i < 0)
        return ctx.Fail("axes has entry {} out of range for X of shape {} (rank {})", a, x.ToString(), x.rank());
      drop[i] = drop[i] || x[i] == 1 || x[i] == kUnknownDim;
    }
  }
  Dims out;
  for (int i = 0; i < x.rank(); ++i)
    if (!drop[i]) out.push_back(x[i]);
  return SetOutAndXShape(ctx, x, out);
}

/// PaddlePaddle's unsqueeze rule: the axes are inserted one after the other, each counted in the
/// shape built so far (a negative axis a stands for a + rank + 1).
Status InferUnsqueeze2(InferShapeContext& ctx) {
  PC_RETURN_IF_ERROR(tensor_internal::RejectTensorInput(ctx, kAxesTensor, "axes"));
  PC_RETURN_IF_ERROR(tensor_internal::RejectTensorInput(ctx, kAxesTensorList, "axes"));
  Dims x = ctx.InputDims(kX);
  auto axes = ctx.Attr<std::vector<int>>("axes");
  const int out_rank = x.rank() + static_cast<int>(axes.size());
  if (out_rank > kMaxRank - 1)
    return ctx.Fail("unsqueezing X of shape {} by {} axes gives rank {}, more than the maximum of {}", x.ToString(),
                    axes.size(), out_rank, kMaxRank - 1);
  // Mark the new axes (true) in a shape that grows by one axis per entry.
  std::array<bool, kMaxRank> is_new{};
  int rank = x.rank();
  for (int a : axes) {
    const int cur = a < 0 ? a + rank + 1 : a;
    if (cur < 0 || cur > rank)
      return ctx.Fail("axes has entry {} out of range for a shape of rank {} (X has shape {}): it must be in [{}, {}]",
                      a, rank, x.ToString(), -rank - 1, rank);
    std::copy_backward(is_new.begin() + cur, is_new.begin() + rank, is_new.begin() + rank + 1);
    is_new[cur] = true;
    ++rank;
  }
  Dims out;
  for (int i = 0, k = 0; i < out_rank; ++i) out.push_back(is_new[i] ? 1 : x[k++]);
  return SetOutAndXShape(ctx, x, out);
}

/// X@GRAD takes X's shape, from XShape (PaddlePaddle 2.x and paddlec bind it) or from X itself
/// (PaddlePaddle 3.x binds X, whose data it never reads; so do its PIR programs' reshape_grad and
/// flatten_grad).
Status InferGradShapeFromXShapeOrX(InferShapeContext& ctx) {
  if (ctx.HasInput(kXShapeIn)) return InferGradFromXShape(ctx);
  if (!ctx.HasInput(kXForGrad))
    return ctx.Fail("neither XShape nor X is bound: the gradient needs one of them for X's shape");
  return SetGradLikeX(ctx, ctx.InputDims(kXForGrad));
}

/// squeeze2_grad / unsqueeze2_grad.
Status InferGradFromXShapeOrX(InferShapeContext& ctx) {
  PC_RETURN_IF_ERROR(tensor_internal::RejectTensorInput(ctx, kGradAxesTensor, "axes"));
  PC_RETURN_IF_ERROR(tensor_internal::RejectTensorInput(ctx, kGradAxesTensorList, "axes"));
  return InferGradShapeFromXShapeOrX(ctx);
}

/// The default gradient, reading XShape when the forward op wrote one and X otherwise.
Status XShapeOrXGradMaker(GradMakerContext& ctx) {
  PC_RETURN_IF_ERROR(DefaultGradMaker(ctx));
  if (ctx.Output("XShape").empty()) return Status::OK();
  for (pb::OpDesc& op : ctx.emitted()) {
    auto* ins = op.mutable_inputs();
    for (int i = ins->size() - 1; i >= 0; --i)
      if (ins->Get(i).parameter() == kXForGrad.name) ins->DeleteSubrange(i, 1);
  }
  return Status::OK();
}

// ---- shape ------------------------------------------------------------------------------------

constexpr InSlot kShapeInput{0, "Input"};

Status InferShapeOp(InferShapeContext& ctx) {
  ctx.SetOutput(kOut, Dims{ctx.InputDims(kShapeInput).rank()}, DType::kInt32);
  return Status::OK();
}

/// Out = Input's dims (int32, as PaddlePaddle writes them); Input's data is not read.
Status ShapeCpu(KernelContext& ctx) {
  const Dims& d = ctx.In(kShapeInput).dims();
  int32_t* out = ctx.Out(kOut).data<int32_t>();
  for (int i = 0; i < d.rank(); ++i) out[i] = static_cast<int32_t>(d[i]);
  return Status::OK();
}

// ---- transpose2 -----------------------------------------------------------------------------

/// A permutation: output axis i takes input axis p[i].
struct Perm {
  std::array<int, kMaxRank> p{};
  int rank = 0;
};

/// Checks `axis` against X's rank and normalizes negative entries; `err` names the problem.
bool MakePerm(const std::vector<int>& axis, int rank, Perm& perm, std::string* err) {
  auto axis_str = [&] {
    std::string s = "[";
    for (size_t i = 0; i < axis.size(); ++i) s += (i ? ", " : "") + std::to_string(axis[i]);
    return s + "]";
  };
  if (static_cast<int>(axis.size()) != rank) {
    if (err) *err = fmt::format("axis {} has {} entries but X has rank {}", axis_str(), axis.size(), rank);
    return false;
  }
  std::array<bool, kMaxRank> seen{};
  perm.rank = rank;
  for (int i = 0; i < rank; ++i) {
    int a = NormalizeAxis(axis[i], rank);
    if (a < 0) {
      if (err) *err = fmt::format("axis {} has entry {} out of range for rank {}", axis_str(), axis[i], rank);
      return false;
    }
    if (seen[a]) {
      if (err) *err = fmt::format("axis {} is not a permutation: axis {} appears twice", axis_str(), a);
      return false;
    }
    seen[a] = true;
    perm.p[i] = a;
  }
  return true;
}

Status InferTranspose2(InferShapeContext& ctx) {
  Dims x = ctx.InputDims(kX);
  Perm perm;
  std::string err;
  if (!MakePerm(ctx.Attr<std::vector<int>>("axis"), x.rank(), perm, &err))
    return ctx.Fail("{} (X has shape {})", err, x.ToString());
  Dims out;
  for (int i = 0; i < perm.rank; ++i) out.push_back(x[perm.p[i]]);
  return SetOutAndXShape(ctx, x, out);
}

/// Input dims and permutation after dropping size-1 axes and merging input axes that stay adjacent
/// and in order in the output; the element order of the result is unchanged.
void Coalesce(const Dims& in, const Perm& perm, Dims& cin, Perm& cperm) {
  // Keep input axes of size != 1, renumbered.
  std::array<int, kMaxRank> renum{};
  Dims kept;
  for (int a = 0; a < in.rank(); ++a) {
    renum[a] = in[a] == 1 ? -1 : kept.rank();
    if (in[a] != 1) kept.push_back(in[a]);
  }
  Perm p;
  for (int i = 0; i < perm.rank; ++i)
    if (renum[perm.p[i]] >= 0) p.p[p.rank++] = renum[perm.p[i]];
  // Group runs of consecutive input axes in output order; group g starts at input axis start[g].
  std::array<int, kMaxRank> group_of{};  // input axis -> group, for the runs' first axes
  std::array<int, kMaxRank> out_groups{};
  std::array<bool, kMaxRank> starts{};
  int ngroups = 0;
  for (int i = 0; i < p.rank; ++i) {
    if (i > 0 && p.p[i] == p.p[i - 1] + 1) continue;
    starts[p.p[i]] = true;
    out_groups[ngroups++] = p.p[i];
  }
  // Merged input dims in input order: a new group begins at every run start.
  cin = Dims();
  int g = -1;
  for (int a = 0; a < kept.rank(); ++a) {
    if (starts[a]) {
      cin.push_back(kept[a]);
      group_of[a] = ++g;
    } else {
      cin[g] *= kept[a];
    }
  }
  cperm.rank = ngroups;
  for (int i = 0; i < ngroups; ++i) cperm.p[i] = group_of[out_groups[i]];
}

/// dst[c * dst_col + r] = src[r * src_row + c] for r < rows, c < cols: one 2-D tile job. The inner loop
/// runs along the side whose strided access has the smaller stride (a skinny side such as NCHW's 3
/// channels is then walked contiguously on the other); square-ish blocks use kTile x kTile tiles.
template <class E>
void Transpose2D(const E* src, int64_t src_row, E* dst, int64_t dst_col, int64_t rows, int64_t cols) {
  constexpr int64_t kTile = 32;
  constexpr int64_t kSmallStride = 1024 / sizeof(E);  // strided accesses within 1 KB stay in few pages
  const bool inner_c = rows < cols && dst_col <= kSmallStride;
  const bool inner_r = !inner_c && cols < rows && src_row <= kSmallStride;
  const int64_t tile_r = inner_c ? std::min<int64_t>(rows, 256) : kTile;
  const int64_t tile_c = inner_r ? std::min<int64_t>(cols, 256) : kTile;
  for (int64_t r0 = 0; r0 < rows; r0 += tile_r)
    for (int64_t c0 = 0; c0 < cols; c0 += tile_c) {
      const int64_t r1 = std::min(rows, r0 + tile_r), c1 = std::min(cols, c0 + tile_c);
      if (inner_c) {
        for (int64_t i = r0; i < r1; ++i)
          for (int64_t j = c0; j < c1; ++j) dst[j * dst_col + i] = src[i * src_row + j];
      } else {
        for (int64_t j = c0; j < c1; ++j)
          for (int64_t i = r0; i < r1; ++i) dst[j * dst_col + i] = src[i * src_row + j];
      }
    }
}

/// Out = transpose(In) for elements of type E (chosen by size: the op only moves bytes).
template <class E>
void TransposeImpl(const E* in, E* out, const Dims& in_dims, const Perm& perm) {
  const int64_t n = in_dims.Numel();
  if (n == 0) return;
  Dims d;
  Perm p;
  Coalesce(in_dims, perm, d, p);
  const int r = p.rank;
  if (r <= 1) {
    CopyBytes(out, in, static_cast<size_t>(n) * sizeof(E));
    return;
  }
  std::array<int64_t, kMaxRank> in_stride{}, out_stride{};
  in_stride[r - 1] = out_stride[r - 1] = 1;
  for (int a = r - 2; a >= 0; --a) in_stride[a] = in_stride[a + 1] * d[a + 1];
  std::array<int64_t, kMaxRank> out_dims{}, src_stride{};  // per output axis: size and input stride
  for (int i = 0; i < r; ++i) {
    out_dims[i] = d[p.p[i]];
    src_stride[i] = in_stride[p.p[i]];
  }
  for (int i = r - 2; i >= 0; --i) out_stride[i] = out_stride[i + 1] * out_dims[i + 1];

  if (p.p[r - 1] == r - 1) {
    // The last axis stays last: every output row is a contiguous input run, one memcpy each.
    const int64_t inner = out_dims[r - 1], nrows = n / inner;
    ParallelFor(nrows, std::max<int64_t>(1, kElementwiseGrain / inner), [&](int64_t b, int64_t e) {
      std::array<int64_t, kMaxRank> idx{};
      int64_t q = b, src = 0;
      for (int i = r - 2; i >= 0; --i) {
        idx[i] = q % out_dims[i];
        q /= out_dims[i];
        src += idx[i] * src_stride[i];
      }
      for (int64_t row = b; row < e; ++row) {
        std::memcpy(out + row * inner, in + src, static_cast<size_t>(inner) * sizeof(E));
        for (int i = r - 2; i >= 0; --i) {  // odometer over the output row index
          src += src_stride[i];
          if (++idx[i] < out_dims[i]) break;
          src -= idx[i] * src_stride[i];
          idx[i] = 0;
        }
      }
    });
    return;
  }

  // Otherwise a batch of 2-D transposes: rows run along input axis p[r-1] (the output's last axis,
  // contiguous in Out), columns along input axis r-1 (contiguous in In), found at output position jc.
  // The remaining output axes index the batch.
  int jc = 0;
  while (p.p[jc] != r - 1) ++jc;
  const int64_t rows = out_dims[r - 1], cols = d[r - 1];
  const int64_t src_row = src_stride[r - 1], dst_col = out_stride[jc];
  std::array<int64_t, kMaxRank> bdims{}, bsrc{}, bdst{};
  int nb = 0;
  for (int i = 0; i < r - 1; ++i) {
    if (i == jc) continue;
    bdims[nb] = out_dims[i];
    bsrc[nb] = src_stride[i];
    bdst[nb] = out_stride[i];
    ++nb;
  }
  // Jobs are (batch entry, band of up to 32 rows), so a single large matrix still splits across threads.
  constexpr int64_t kBand = 32;
  const int64_t bands = (rows + kBand - 1) / kBand, jobs = n / (rows * cols) * bands;
  ParallelFor(jobs, std::max<int64_t>(1, kElementwiseGrain / (kBand * cols)), [&](int64_t b, int64_t e) {
    for (int64_t job = b; job < e; ++job) {
      int64_t q = job / bands, r0 = (job % bands) * kBand, src = 0, dst = 0;
      for (int i = nb - 1; i >= 0; --i) {
        int64_t k = q % bdims[i];
        q /= bdims[i];
        src += k * bsrc[i];
        dst += k * bdst[i];
      }
      Transpose2D(in + src + r0 * src_row, src_row, out + dst + r0, dst_col, std::min(kBand, rows - r0), cols);
    }
  });
}

void Transpose(const Tensor& in, Tensor& out, const Perm& perm) {
  switch (SizeOf(in.dtype())) {
    case 1:
      TransposeImpl(in.data<uint8_t>(), out.data<uint8_t>(), in.dims(), perm);
      break;
    case 2:
      TransposeImpl(in.data<uint16_t>(), out.data<uint16_t>(), in.dims(), perm);
      break;
    case 4:
      TransposeImpl(in.data<uint32_t>(), out.data<uint32_t>(), in.dims(), perm);
      break;
    default:
      TransposeImpl(in.data<uint64_t>(), out.data<uint64_t>(), in.dims(), perm);
      break;
  }
}

struct TransposeAttrs {
  std::vector<int> axis;
  static TransposeAttrs Decode(const AttrReader& a) { return {a.Get<std::vector<int>>("axis")}; }
};

Status TransposeCpu(KernelContext& ctx, const TransposeAttrs& a) {
  const Tensor& x = ctx.In(kX);
  Perm perm;
  if (!MakePerm(a.axis, x.dims().rank(), perm, nullptr))
    return MakeError(ErrorCode::kRuntime, "transpose2: axis does not fit X of shape {}", x.dims().ToString());
  Transpose(x, ctx.Out(kOut), perm);
  return Status::OK();
}

/// X@GRAD = transpose(Out@GRAD) by the inverse permutation.
Status TransposeGradCpu(KernelContext& ctx, const TransposeAttrs& a) {
  Tensor* dx = ctx.OutOpt(kDX);
  if (dx == nullptr) return Status::OK();
  const Tensor& dout = ctx.In(kDOut);
  Perm perm, inv;
  if (!MakePerm(a.axis, dout.dims().rank(), perm, nullptr))
    return MakeError(ErrorCode::kRuntime, "transpose2_grad: axis does not fit Out@GRAD of shape {}",
                     dout.dims().ToString());
  inv.rank = perm.rank;
  for (int i = 0; i < perm.rank; ++i) inv.p[perm.p[i]] = i;
  Transpose(dout, *dx, inv);
  return Status::OK();
}

// ---- Registration ---------------------------------------------------------------------------

/// The gradient op shared by reshape2, flatten_contiguous_range and transpose2.
OpBuilder AddXShapeGrad(OpRegistry& r, const std::string& fwd) {
  OpBuilder g = r.Add(fwd + "_grad");
  g.GradOf(fwd)
      .Doc(fmt::format("Gradient of {}: X@GRAD from Out@GRAD, shaped by XShape or X.", fwd))
      .Input(kXShapeIn, "The forward XShape ([0] + X's dims), when the forward op wrote one.", kDispensable)
      .Input(kDOut, "Gradient of the loss with respect to Out.")
      .Input(kXForGrad, "The forward X, for its shape only (PaddlePaddle 3's PIR gradients bind it instead of XShape).",
             kDispensable)
      .Output(kDX, "Gradient of the loss with respect to X.")
      .InferShape(InferGradShapeFromXShapeOrX);
  return g;
}

}  // namespace

void RegisterShapeOps(OpRegistry& r) {
  OpBuilder reshape = r.Add("reshape2");
  reshape
      .Doc(
          "Out = X with a new shape (elements copied in order). `shape` entries: n > 0 sets a dimension, 0 "
          "copies X's dimension at the same index, one -1 is inferred from the element count.")
      .Input(kX, "The tensor to reshape.")
      .Input(kShape, "A 1-D int tensor overriding `shape` (not supported yet).", kDispensable)
      .Input(kShapeTensor, "1-element int tensors overriding `shape` (not supported yet).", kDuplicable | kDispensable)
      .Output(kOut, "X's elements in the new shape.")
      .Output(kXShape, "[0] + X's dims, a zero-element tensor recording X's shape for the gradient.", kIntermediate)
      .Attr("shape", std::vector<int>{}, "The new shape (0 = copy X's dimension, -1 = infer).")
      .InferShape(InferReshape2)
      .NoGradInput(kShape)
      .NoGradInput(kShapeTensor)
      .Grad(XShapeGradMaker);
  OpBuilder reshape_grad = AddXShapeGrad(r, "reshape2");
  ForEachDType([&]<class T>() {
    reshape.Kernel(DeviceType::kCPU, DTypeOf<T>(), MakeKernel(CopyForwardCpu));
    reshape_grad.Kernel(DeviceType::kCPU, DTypeOf<T>(), MakeKernel(CopyGradCpu));
  });

  OpBuilder flatten = r.Add("flatten_contiguous_range");
  flatten.Doc("Out = X with dimensions start_axis..stop_axis (inclusive) merged into one.")
      .Input(kX, "The tensor to flatten.")
      .Output(kOut, "X's elements with the axis range merged.")
      .Output(kXShape, "[0] + X's dims, a zero-element tensor recording X's shape for the gradient.", kIntermediate)
      .Attr("start_axis", 1, "First axis to merge; negative counts from the end.")
      .Attr("stop_axis", 1, "Last axis to merge (inclusive); negative counts from the end.")
      .InferShape(InferFlatten)
      .Grad(XShapeGradMaker);
  OpBuilder flatten_grad = AddXShapeGrad(r, "flatten_contiguous_range");
  ForEachDType([&]<class T>() {
    flatten.Kernel(DeviceType::kCPU, DTypeOf<T>(), MakeKernel(CopyForwardCpu));
    flatten_grad.Kernel(DeviceType::kCPU, DTypeOf<T>(), MakeKernel(CopyGradCpu));
  });

  OpBuilder squeeze = r.Add("squeeze2");
  squeeze.Doc("Removes size-1 dimensions: those listed in `axes` (others listed stay), or all of them.")
      .Input(kX, "The tensor to squeeze.")
      .Output(kOut, "X's elements without the squeezed dimensions.")
      .Output(kXShape, "[0] + X's dims, a zero-element tensor recording X's shape for the gradient.",
              kIntermediate | kDispensable)
      .Attr("axes", std::vector<int>{}, "Axes to remove when of size 1; empty removes every size-1 axis.")
      .InferShape(InferSqueeze2)
      .Grad(XShapeOrXGradMaker);
  OpBuilder unsqueeze = r.Add("unsqueeze2");
  unsqueeze.Doc("Inserts size-1 dimensions at `axes`, each index counted in the shape built so far.")
      .Input(kX, "The tensor to unsqueeze.")
      .Input(kAxesTensor, "A 1-D int tensor overriding `axes` (not supported yet).", kDispensable)
      .Input(kAxesTensorList, "1-element int tensors overriding `axes` (not supported yet).",
             kDuplicable | kDispensable)
      .Output(kOut, "X's elements with the new dimensions.")
      .Output(kXShape, "[0] + X's dims, a zero-element tensor recording X's shape for the gradient.",
              kIntermediate | kDispensable)
      .Attr("axes", std::vector<int>{}, "Where to insert size-1 axes; negative counts from the end.")
      .InferShape(InferUnsqueeze2)
      .NoGradInput(kAxesTensor)
      .NoGradInput(kAxesTensorList)
      .Grad(XShapeOrXGradMaker);
  for (const char* fwd : {"squeeze2", "unsqueeze2"}) {
    OpBuilder g = r.Add(std::string(fwd) + "_grad");
    g.GradOf(fwd)
        .Doc(fmt::format("Gradient of {}: X@GRAD from Out@GRAD, shaped by XShape or X.", fwd))
        .Input(kXShapeIn, "The forward XShape ([0] + X's dims), when the forward op wrote one.", kDispensable)
        .Input(kDOut, "Gradient of the loss with respect to Out.")
        .Input(kXForGrad, "The forward X, for its shape only (PaddlePaddle 3.x binds it instead of XShape).",
               kDispensable);
    if (std::string_view(fwd) == "unsqueeze2")  // PaddlePaddle's unsqueeze2_grad carries the axes tensors too
      g.Input(kGradAxesTensor, "The forward AxesTensor (not supported yet).", kDispensable)
          .Input(kGradAxesTensorList, "The forward AxesTensorList (not supported yet).", kDuplicable | kDispensable);
    g.Output(kDX, "Gradient of the loss with respect to X.").InferShape(InferGradFromXShapeOrX);
    ForEachDType([&]<class T>() { g.Kernel(DeviceType::kCPU, DTypeOf<T>(), MakeKernel(CopyGradCpu)); });
  }
  ForEachDType([&]<class T>() {
    squeeze.Kernel(DeviceType::kCPU, DTypeOf<T>(), MakeKernel(CopyForwardCpu));
    unsqueeze.Kernel(DeviceType::kCPU, DTypeOf<T>(), MakeKernel(CopyForwardCpu));
  });

  OpBuilder shape = r.Add("shape");
  shape.Doc("Out = the dims of Input as a 1-D int32 tensor (Input's data is not read).")
      .Input(kShapeInput, "The tensor whose shape is taken.")
      .Output(kOut, "Input's dims, one int32 per axis.")
      .InferShape(InferShapeOp)
      .NoGradient();
  ForEachDType([&]<class T>() { shape.Kernel(DeviceType::kCPU, DTypeOf<T>(), MakeKernel(ShapeCpu)); });

  OpBuilder transpose = r.Add("transpose2");
  transpose.Doc("Permutes X's axes: Out's axis i is X's axis axis[i].")
      .Input(kX, "The tensor to permute.")
      .Output(kOut, "The permuted tensor.")
      .Output(kXShape, "[0] + X's dims, a zero-element tensor recording X's shape for the gradient.", kIntermediate)
      .RequiredAttr<std::vector<int>>("axis", "A permutation of X's axes; negative entries count from the end.")
      .NonEmpty()
      .Attr("data_format", "AnyLayout", "PaddlePaddle layout hint; ignored.")
      .ExtraAttr()
      .InferShape(InferTranspose2)
      .Grad(XShapeGradMaker);
  OpBuilder transpose_grad = AddXShapeGrad(r, "transpose2");
  ForEachDType([&]<class T>() {
    transpose.Kernel(DeviceType::kCPU, DTypeOf<T>(), MakeKernel(TransposeCpu));
    transpose_grad.Kernel(DeviceType::kCPU, DTypeOf<T>(), MakeKernel(TransposeGradCpu));
  });
}

}  // namespace paddlec::ops
