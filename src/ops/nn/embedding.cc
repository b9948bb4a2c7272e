// lookup_table_v2 (embedding) and its gradient: Out[..., :] = W[Ids[...], :], with rows equal to
// padding_idx giving zeros; the gradient scatter-adds Out@GRAD rows into a dense W@GRAD, or with
// is_sparse is a SelectedRows (runtime/tensor.h): the ids as rows, Out@GRAD's rows as values, so a
// lazy optimizer touches only those rows of a large table.
#include <cstring>
#include <vector>

#include "common/cpu_kernels.h"
#include "nn/nn.h"
#include "paddlec/ops/op_registry.h"

namespace paddlec::ops {
namespace {

constexpr InSlot kW{0, "W"};
constexpr InSlot kIds{1, "Ids"};
constexpr OutSlot kOut{0, "Out"};
// lookup_table_v2_grad: (W, Ids, Out@GRAD) -> W@GRAD.
constexpr InSlot kDOut{2, "Out@GRAD"};
constexpr OutSlot kDW{0, "W@GRAD"};

constexpr int64_t kNoPadding = -1;

struct EmbeddingAttrs {
  int64_t padding_idx;
  bool is_sparse;
  static EmbeddingAttrs Decode(const AttrReader& a) {
    return {a.Get<int64_t>("padding_idx"), a.Get<bool>("is_sparse")};
  }
};

/// Checks W and Ids; returns the output shape Ids.dims + [embedding_dim].
Status EmbeddingOutDims(InferShapeContext& ctx, Dims* out) {
  Dims w = ctx.InputDims(kW), ids = ctx.InputDims(kIds);
  if (w.rank() != 2)
    return ctx.Fail("W has shape {} (rank {}) but lookup_table_v2 needs a 2-D table [vocabulary, embedding_dim]",
                    w.ToString(), w.rank());
  DType id_type = ctx.InputDType(kIds);
  if (id_type != DType::kInt64 && id_type != DType::kInt32)
    return ctx.Fail("Ids is {} but must be int64 or int32", DTypeName(id_type));
  if (ids.rank() >= kMaxRank)
    return ctx.Fail("Ids has shape {} (rank {}): Out would exceed the maximum rank {}", ids.ToString(), ids.rank(),
                    kMaxRank);
  *out = ids;
  out->push_back(w[1]);
  return Status::OK();
}

Status InferEmbedding(InferShapeContext& ctx) {
  Dims out;
  PC_RETURN_IF_ERROR(EmbeddingOutDims(ctx, &out));
  ctx.SetOutput(kOut, out, ctx.InputDType(kW));
  return Status::OK();
}

Status InferEmbeddingGrad(InferShapeContext& ctx) {
  Dims out;
  PC_RETURN_IF_ERROR(EmbeddingOutDims(ctx, &out));
  Dims dout = ctx.InputDims(kDOut);
  if (!DimsMatch(dout, out))
    return ctx.Fail("Out@GRAD has shape {} but lookup_table_v2 of W {} and Ids {} produces {}", dout.ToString(),
                    ctx.InputDims(kW).ToString(), ctx.InputDims(kIds).ToString(), out.ToString());
  ctx.ShareDims(kW, kDW);
  return Status::OK();
}

/// The first id outside [0, vocab) that is not the padding index, as an error naming it.
template <class I>
Status CheckIds(const I* ids, int64_t n, int64_t vocab, int64_t padding_idx, const Dims& w) {
  for (int64_t i = 0; i < n; ++i) {
    int64_t id = static_cast<int64_t>(ids[i]);
    if ((id < 0 || id >= vocab) && (padding_idx == kNoPadding || id != padding_idx))
      return MakeError(ErrorCode::kRuntime,
                       "Ids holds {} at position {}, outside the vocabulary of W {}: ids must be in [0, {})", id, i,
                       w.ToString(), vocab);
  }
  return Status::OK();
}

template <class T, class I>
Status Lookup(const Tensor& wt, const I* ids, int64_t n, int64_t padding_idx, T* out) {
  const int64_t vocab = wt.dims()[0], dim = wt.dims()[1];
  PC_RETURN_IF_ERROR(CheckIds(ids, n, vocab, padding_idx, wt.dims()));
  const T* w = wt.data<T>();
  ParallelFor(n, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(dim, 1)), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      int64_t id = static_cast<int64_t>(ids[i]);
      T* row = out + i * dim;
      if (padding_idx != kNoPadding && id == padding_idx)
        std::fill(row, row + dim, T(0));
      else
        std::memcpy(row, w + id * dim, static_cast<size_t>(dim) * sizeof(T));
    }
  });
  return Status::OK();
}

template <class T>
Status EmbeddingCpu(KernelContext& ctx, const EmbeddingAttrs& attrs) {
  const Tensor& w = ctx.In(kW);
  const Tensor& ids = ctx.In(kIds);
  T* out = ctx.Out(kOut).data<T>();
  if (ids.dtype() == DType::kInt32) return Lookup<T>(w, ids.data<int32_t>(), ids.numel(), attrs.padding_idx, out);
  return Lookup<T>(w, ids.data<int64_t>(), ids.numel(), attrs.padding_idx, out);
}

/// W@GRAD = 0, then row id += Out@GRAD row i for every position i (except padding). Each thread owns a
/// range of W@GRAD rows and adds into them in id order, so sums do not depend on the thread count.
template <class T, class I>
Status ScatterAdd(const Dims& w, const I* ids, int64_t n, int64_t padding_idx, const T* dout, T* dw) {
  const int64_t vocab = w[0], dim = w[1];
  PC_RETURN_IF_ERROR(CheckIds(ids, n, vocab, padding_idx, w));
  ParallelFor(vocab, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(dim, 1)), [&](int64_t r0, int64_t r1) {
    std::fill(dw + r0 * dim, dw + r1 * dim, T(0));
    for (int64_t i = 0; i < n; ++i) {
      int64_t id = static_cast<int64_t>(ids[i]);
      if (id < r0 || id >= r1 || (padding_idx != kNoPadding && id == padding_idx)) continue;
      MutEigenVec<T>(dw + id * dim, dim) += ConstEigenVec<T>(dout + i * dim, dim);
    }
  });
  return Status::OK();
}

/// W@GRAD as a SelectedRows: one row per id except padding_idx, valued Out@GRAD's row.
template <class T, class I>
Status SparseGrad(KernelContext& ctx, const I* ids, int64_t n, int64_t padding_idx) {
  const Dims& w = ctx.In(kW).dims();
  PC_RETURN_IF_ERROR(CheckIds(ids, n, w[0], padding_idx, w));
  std::vector<int64_t> rows, positions;
  for (int64_t i = 0; i < n; ++i)
    if (padding_idx == kNoPadding || static_cast<int64_t>(ids[i]) != padding_idx) {
      rows.push_back(static_cast<int64_t>(ids[i]));
      positions.push_back(i);
    }
  const int64_t dim = w[1];
  PC_RETURN_IF_ERROR(ctx.ResizeOut(kDW, Dims{static_cast<int64_t>(rows.size()), dim}, ctx.In(kDOut).dtype()));
  Tensor& dw = ctx.Out(kDW);
  const T* dout = ctx.In(kDOut).data<T>();
  for (size_t k = 0; k < positions.size(); ++k)
    std::memcpy(dw.data<T>() + k * dim, dout + positions[k] * dim, static_cast<size_t>(dim) * sizeof(T));
  dw.SetSelectedRows(std::move(rows), w[0]);
  return Status::OK();
}

template <class T>
Status EmbeddingGradCpu(KernelContext& ctx, const EmbeddingAttrs& attrs) {
  Tensor* dw = ctx.OutOpt(kDW);
  if (dw == nullptr) return Status::OK();
  const Tensor& ids = ctx.In(kIds);
  if (attrs.is_sparse) {
    if (ids.dtype() == DType::kInt32) return SparseGrad<T>(ctx, ids.data<int32_t>(), ids.numel(), attrs.padding_idx);
    return SparseGrad<T>(ctx, ids.data<int64_t>(), ids.numel(), attrs.padding_idx);
  }
  const T* dout = ctx.In(kDOut).data<T>();
  const Dims& w = ctx.In(kW).dims();
  PC_RETURN_IF_ERROR(ctx.ResizeOut(kDW, w, ctx.In(kDOut).dtype()));
  dw->ClearSelectedRows();
  if (ids.dtype() == DType::kInt32)
    return ScatterAdd<T>(w, ids.data<int32_t>(), ids.numel(), attrs.padding_idx, dout, dw->data<T>());
  return ScatterAdd<T>(w, ids.data<int64_t>(), ids.numel(), attrs.padding_idx, dout, dw->data<T>());
}

}  // namespace

void RegisterEmbeddingOps(OpRegistry& r) {
  r.Add("lookup_table_v2")
      .Doc(
          "Embedding lookup: Out[i..., :] = W[Ids[i...], :] for ids of any shape; positions whose id equals "
          "padding_idx get zeros. An id outside [0, vocabulary) is a run-time error.")
      .Input(kW, "The embedding table [vocabulary, embedding_dim].")
      .Input(kIds, "int64 or int32 ids of any shape.")
      .Output(kOut, "Embeddings, shaped Ids.dims + [embedding_dim], of W's dtype.")
      .Attr("padding_idx", int64_t{-1}, "Id whose rows are zeros and get no gradient; -1 for none.")
      .Min(-1)
      .Attr("is_sparse", false,
            "Make W@GRAD a SelectedRows (the looked-up rows only), which sgd, momentum and adam apply lazily.")
      .Attr("is_distributed", false, "Parameter-server sharding hint; ignored.")
      .ExtraAttr()
      .Attr("remote_prefetch", false, "Parameter-server prefetch hint; ignored.")
      .ExtraAttr()
      .Attr("trainer_id", 0, "Parameter-server trainer index; ignored.")
      .ExtraAttr()
      .Attr("slot", 0, "Parameter-server slot of the ids; ignored.")
      .ExtraAttr()
      .Attr("height_sections", std::vector<int64_t>{}, "Parameter-server table sections; ignored.")
      .ExtraAttr()
      .Attr("epmap", std::vector<std::string>{}, "Parameter-server endpoints; ignored.")
      .ExtraAttr()
      .Attr("table_names", std::vector<std::string>{}, "Parameter-server table names; ignored.")
      .ExtraAttr()
      .InferShape(InferEmbedding)
      .Grad()
      .ShareLoD(kIds)
      .NoGradInput(kIds)
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernel(EmbeddingCpu<float>))
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernel(EmbeddingCpu<double>));

  r.Add("lookup_table_v2_grad")
      .GradOf("lookup_table_v2")
      .Doc(
          "Gradient of lookup_table_v2: a dense W@GRAD, zero except the rows of the looked-up ids, each the sum of "
          "its Out@GRAD rows; with is_sparse a SelectedRows of one row per id (duplicates add when applied).")
      .Input(kW, "The forward table (sizes W@GRAD).")
      .Input(kIds, "The forward ids.")
      .Input(kDOut, "Gradient of the loss with respect to Out.")
      .Output(kDW, "Gradient of the loss with respect to W: dense, or a SelectedRows with is_sparse.")
      .InferShape(InferEmbeddingGrad)
      .OutputDimsFromKernel()
      .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernel(EmbeddingGradCpu<float>))
      .Kernel(DeviceType::kCPU, DType::kFloat64, MakeKernel(EmbeddingGradCpu<double>));
}

}  // namespace paddlec::ops
