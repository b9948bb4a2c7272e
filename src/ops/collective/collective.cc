// The collective ops of PaddlePaddle's fleet (c_allreduce_*, c_broadcast, c_allgather, c_identity,
// the stream syncs) and coalesce_tensor, which packs gradients into one buffer so that one allreduce
// serves many. CPU kernels run on the process's communicator (runtime/comm.h: Open MPI under
// mpirun, a group of one otherwise); the GPU ones on NCCL (collective_cuda.cc).
//
// On CPUs, `use_calc_stream` = false (PaddlePaddle: run on the communication stream) makes a
// c_allreduce_* start its collective and return (Communicator::StartAllReduce), so that the ops after
// it compute while it runs; c_sync_comm_stream waits for every collective of its ring before the op
// after it reads the buffers, and the executor waits at the end of each run for any left without one.
// Every other collective blocks (and first waits for the started ones, keeping the ranks' order).
// GPUs do the same with a communication stream and events (collective_cuda.cc).
#include <cstring>

#include "collective_slots.h"
#include "paddlec/ir/program.h"

namespace paddlec::ops {
namespace {

using namespace collective;  // NOLINT: the family's own slot constants

constexpr DType kCommDTypes[] = {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64};

/// Out = X (a copy unless they are one variable), the first step of every in-place collective.
void CopyToOut(const Tensor& x, Tensor& out) {
  if (out.raw_data() != x.raw_data() && x.nbytes() > 0) std::memcpy(out.raw_data(), x.raw_data(), x.nbytes());
}

StatusOr<runtime::Communicator*> Comm(int ring_id, std::string_view op) {
  PC_RETURN_IF_ERROR(CheckRing(ring_id, op));
  return runtime::WorldCommunicator();
}

template <runtime::ReduceOp kOp>
Status AllReduceCpu(KernelContext& ctx, const CommAttrs& a) {
  PC_ASSIGN_OR_RETURN(runtime::Communicator * comm, Comm(a.ring_id, "c_allreduce"));
  Tensor& out = ctx.Out(kOut);
  CopyToOut(ctx.In(kX), out);
  if (!a.use_calc_stream) return comm->StartAllReduce(out.raw_data(), out.numel(), out.dtype(), kOp, out.buffer());
  return comm->AllReduce(out.raw_data(), out.numel(), out.dtype(), kOp);
}

/// PaddlePaddle 3's all_reduce: the reduction in an attribute.
Status AllReduceByTypeCpu(KernelContext& ctx, const CommAttrs& a) {
  PC_ASSIGN_OR_RETURN(runtime::Communicator * comm, Comm(a.ring_id, "all_reduce"));
  Tensor& out = ctx.Out(kOut);
  CopyToOut(ctx.In(kX), out);
  PC_RETURN_IF_ERROR(comm->AllReduce(out.raw_data(), out.numel(), out.dtype(), ReduceOf(a.reduce_type)));
  if (a.reduce_type != kReduceAvg) return Status::OK();
  return VisitDType(out.dtype(), [&]<class T>() {
    T* p = out.data<T>();
    for (int64_t i = 0; i < out.numel(); ++i) p[i] = static_cast<T>(p[i] / comm->size());
  });
}

Status BroadcastCpu(KernelContext& ctx, const CommAttrs& a) {
  PC_ASSIGN_OR_RETURN(runtime::Communicator * comm, Comm(a.ring_id, "c_broadcast"));
  Tensor& out = ctx.Out(kOut);
  CopyToOut(ctx.In(kX), out);
  return comm->Broadcast(out.raw_data(), static_cast<int64_t>(out.nbytes()), a.root);
}

Status AllGatherCpu(KernelContext& ctx, const CommAttrs& a) {
  PC_ASSIGN_OR_RETURN(runtime::Communicator * comm, Comm(a.ring_id, "c_allgather"));
  if (comm->size() != a.nranks)
    return MakeError(ErrorCode::kInvalidArgument, "c_allgather: nranks is {} but the process group has {} ranks",
                     a.nranks, comm->size());
  const Tensor& x = ctx.In(kX);
  return comm->AllGather(x.raw_data(), ctx.Out(kOut).raw_data(), static_cast<int64_t>(x.nbytes()));
}

/// c_identity, c_sync_calc_stream: Out[i] = X[i].
Status PassThroughCpu(KernelContext& ctx) {
  int n = std::min(ctx.NumIn(kX), ctx.NumOut(kOut));
  for (int i = 0; i < n; ++i) CopyToOut(ctx.In(kX, i), ctx.Out(kOut, i));
  return Status::OK();
}

/// c_sync_comm_stream: the started collectives finish before X is read.
Status SyncCommCpu(KernelContext& ctx, const CommAttrs& a) {
  PC_ASSIGN_OR_RETURN(runtime::Communicator * comm, Comm(a.ring_id, "c_sync_comm_stream"));
  PC_RETURN_IF_ERROR(comm->WaitAll());
  return PassThroughCpu(ctx);
}

Status CoalesceCpu(KernelContext& ctx, const CoalesceAttrs& a) {
  Tensor& fused = ctx.Out(kFusedOutput);
  int n = ctx.NumIn(kInput);
  int64_t offset = 0;
  std::vector<int64_t> offsets;
  for (int i = 0; i < n; ++i) {
    const Tensor& in = ctx.In(kInput, i);
    if (in.dtype() != fused.dtype())
      return MakeError(ErrorCode::kInvalidArgument, "coalesce_tensor: Input[{}] is {} but FusedOutput is {}", i,
                       DTypeName(in.dtype()), DTypeName(fused.dtype()));
    offsets.push_back(offset);
    if (a.copy_data && in.numel() > 0) {
      char* dst = static_cast<char*>(fused.raw_data()) + offset * SizeOf(fused.dtype());
      if (dst != in.raw_data()) std::memmove(dst, in.raw_data(), in.nbytes());
    }
    offset += in.numel();
  }
  if (offset != fused.numel())
    return MakeError(ErrorCode::kInvalidArgument, "coalesce_tensor: the inputs hold {} elements, FusedOutput {}",
                     offset, fused.numel());
  if (a.set_constant) {
    PC_RETURN_IF_ERROR(VisitDType(
        fused.dtype(), [&]<class T>() { std::fill_n(fused.data<T>(), fused.numel(), static_cast<T>(a.constant)); }));
  }
  // Outputs alias the fused buffer (PaddlePaddle's layout): a collective on FusedOutput updates them all.
  for (int i = 0; i < ctx.NumOut(kOutput) && i < n; ++i) {
    Dims dims = ctx.In(kInput, i).dims();
    BindView(ctx.Out(kOutput, i), fused, dims, fused.dtype(), offsets[i]);
  }
  return Status::OK();
}

Status InferCoalesce(InferShapeContext& ctx) {
  int64_t total = 0;
  bool known = true;
  DType dtype = static_cast<DType>(ctx.Attr<int>("dtype"));
  for (int i = 0; i < ctx.NumInputs(kInput); ++i) {
    Dims d = ctx.InputDims(kInput, i);
    int64_t n = d.Numel();
    if (n < 0)
      known = false;
    else
      total += n;
    if (ctx.InputDType(kInput, i) != dtype)
      return ctx.Fail("Input[{}] ({}) is {} but dtype is {}", i, ctx.InputName(kInput, i),
                      DTypeName(ctx.InputDType(kInput, i)), DTypeName(dtype));
    ctx.SetOutput(kOutput, i, d, dtype);
  }
  ctx.SetOutput(kFusedOutput, Dims{known ? total : -1}, dtype);
  return Status::OK();
}

Status InferAllGather(InferShapeContext& ctx) {
  Dims d = ctx.InputDims(kX);
  int nranks = ctx.Attr<int>("nranks");
  if (d.rank() == 0) return ctx.Fail("X ({}) must have at least one dimension", ctx.InputName(kX));
  if (d[0] >= 0) d[0] *= nranks;
  ctx.SetOutput(kOut, d, ctx.InputDType(kX));
  return Status::OK();
}

/// all_reduce and broadcast: out is shaped like x.
Status InferLowerSameAsX(InferShapeContext& ctx) {
  ctx.ShareDims(kLowerX, kLowerOut);
  return Status::OK();
}

Status InferEachSameAsX(InferShapeContext& ctx) {
  if (ctx.NumOutputs(kOut) > ctx.NumInputs(kX))
    return ctx.Fail("Out has {} variables but X only {}", ctx.NumOutputs(kOut), ctx.NumInputs(kX));
  for (int i = 0; i < ctx.NumOutputs(kOut); ++i) ctx.ShareDims(kX, kOut, i);
  return Status::OK();
}

/// The gradient of an allreduce-sum (and of c_identity, its adjoint in model parallelism) is an
/// allreduce-sum of the output gradient, as in PaddlePaddle.
Status AllReduceSumGrad(GradMakerContext& ctx) {
  std::vector<std::string> dx = ctx.InputGrad("X");
  if (dx.empty() || dx[0] == ir::kEmptyVarName) return Status::OK();
  pb::OpDesc op = ctx.NewOp("c_allreduce_sum");
  AddInput(op, "X", ctx.OutputGrad("Out"));
  AddOutput(op, "Out", dx);
  ctx.Emit(std::move(op));
  return Status::OK();
}

OpBuilder& RingAttrs(OpBuilder& b) {
  return b.Attr("ring_id", 0, "The communicator: paddlec has ring 0 (all ranks of the launcher).")
      .Min(0)
      .Attr("use_calc_stream", false,
            "false (PaddlePaddle: the communication stream): an allreduce runs while the ops after it compute, "
            "until c_sync_comm_stream (on a CPU on the communication thread, on a GPU on the communication "
            "stream, after the compute stream's work so far); other collectives block (CPU) or run on the compute "
            "stream (GPU), after those.");
}

template <runtime::ReduceOp kOp>
void AddAllReduce(OpRegistry& r, const std::string& type, const std::string& what, bool grad) {
  OpBuilder b = r.Add(type);
  b.Doc(fmt::format("Out = the element-wise {} of X over all ranks (in place when Out is X).", what))
      .Input(kX, "The tensor of this rank.")
      .Output(kOut, "The reduced tensor, shaped like X; the same on every rank.");
  RingAttrs(b)
      .Attr("use_model_parallel", false, "PaddlePaddle's model-parallel marker; steers nothing here.")
      .InferShape(InferSameAsX);
  if (grad)
    b.Grad(AllReduceSumGrad);
  else
    b.NoGradient();
  for (DType t : kCommDTypes) b.Kernel(DeviceType::kCPU, t, MakeKernel(AllReduceCpu<kOp>));
}

}  // namespace

void RegisterCollectiveOps(OpRegistry& r) {
  using runtime::ReduceOp;
  AddAllReduce<ReduceOp::kSum>(r, "c_allreduce_sum", "sum", true);
  AddAllReduce<ReduceOp::kMax>(r, "c_allreduce_max", "maximum", false);
  AddAllReduce<ReduceOp::kMin>(r, "c_allreduce_min", "minimum", false);
  AddAllReduce<ReduceOp::kProd>(r, "c_allreduce_prod", "product", false);

  OpBuilder bcast = r.Add("c_broadcast");
  bcast.Doc("Out = X of rank `root` on every rank (PaddlePaddle's fleet broadcasts parameters this way).")
      .Input(kX, "The tensor; only the root's values matter.")
      .Output(kOut, "Root's tensor, shaped like X.");
  RingAttrs(bcast).Attr("root", 0, "The rank whose tensor is sent.").Min(0).InferShape(InferSameAsX).NoGradient();
  for (DType t : kCommDTypes) bcast.Kernel(DeviceType::kCPU, t, MakeKernel(BroadcastCpu));

  // PaddlePaddle 3 writes these instead of c_allreduce_* and c_broadcast (its fleet transpiler too).
  OpBuilder all_reduce = r.Add("all_reduce");
  all_reduce.Doc("out = the element-wise reduction of x over all ranks (PaddlePaddle 3's c_allreduce_*).")
      .Input(kLowerX, "The tensor of this rank.")
      .Output(kLowerOut, "The reduced tensor, shaped like x; the same on every rank.")
      .Attr("ring_id", 0, "The communicator: paddlec has ring 0 (all ranks of the launcher).")
      .Min(0)
      .Attr("reduce_type", 0, "0 sum, 1 max, 2 min, 3 product, 4 average.")
      .Range(0, 4)
      .InferShape(InferLowerSameAsX)
      .NoGradient();
  for (DType t : kCommDTypes) all_reduce.Kernel(DeviceType::kCPU, t, MakeKernel(AllReduceByTypeCpu));

  OpBuilder broadcast = r.Add("broadcast");
  broadcast.Doc("out = x of rank `root` on every rank (PaddlePaddle 3's c_broadcast).")
      .Input(kLowerX, "The tensor; only the root's values matter.")
      .Output(kLowerOut, "Root's tensor, shaped like x.")
      .Attr("ring_id", 0, "The communicator: paddlec has ring 0.")
      .Min(0)
      .Attr("root", 0, "The rank whose tensor is sent.")
      .Min(0)
      .InferShape(InferLowerSameAsX)
      .NoGradient();
  for (DType t : kCommDTypes) broadcast.Kernel(DeviceType::kCPU, t, MakeKernel(BroadcastCpu));

  OpBuilder gather = r.Add("c_allgather");
  gather.Doc("Out = the X of every rank concatenated along dimension 0, in rank order.")
      .Input(kX, "The tensor of this rank; the same shape on every rank.")
      .Output(kOut, "[nranks * X.dims[0], X.dims[1:]...].");
  RingAttrs(gather)
      .Attr("nranks", 1, "The number of ranks (checked against the process group at run time).")
      .Min(1)
      .InferShape(InferAllGather)
      .NoGradient();
  for (DType t : kCommDTypes) gather.Kernel(DeviceType::kCPU, t, MakeKernel(AllGatherCpu));

  OpBuilder identity = r.Add("c_identity");
  identity.Doc("Out = X; its gradient is an allreduce-sum (PaddlePaddle's model-parallel input marker).")
      .Input(kX, "The input tensor.")
      .Output(kOut, "X, unchanged.");
  RingAttrs(identity)
      .Attr("use_model_parallel", true, "PaddlePaddle's model-parallel marker; steers nothing here.")
      .InferShape(InferSameAsX)
      .Grad(AllReduceSumGrad);
  for (DType t : kCommDTypes) identity.Kernel(DeviceType::kCPU, t, MakeKernel(PassThroughCpu));

  OpBuilder calc = r.Add("c_sync_calc_stream");
  calc.Doc(
          "Out = X (usually the same variable). PaddlePaddle's GPU order of the communication stream after the "
          "compute stream; paddlec's collectives on the communication stream wait for the compute stream "
          "themselves.")
      .Input(kX, "The tensor whose computation must finish.", kDuplicable)
      .Output(kOut, "X, unchanged.", kDuplicable)
      .InferShape(InferEachSameAsX)
      .NoGradient();
  for (DType t : kCommDTypes) calc.Kernel(DeviceType::kCPU, t, MakeKernel(PassThroughCpu));

  OpBuilder comm = r.Add("c_sync_comm_stream");
  comm.Doc(
          "Waits for the allreduces started on ring_id (use_calc_stream=false: on a CPU they run on the "
          "communication thread; on a GPU on the communication stream, which the compute stream then waits for, "
          "without blocking the host) before the ops after it read X. Out = X.")
      .Input(kX, "The tensors whose communication must finish.", kDuplicable)
      .Output(kOut, "X, unchanged.", kDuplicable)
      .Attr("ring_id", 0, "The communicator: paddlec has ring 0.")
      .Min(0)
      .InferShape(InferEachSameAsX)
      .NoGradient();
  for (DType t : kCommDTypes) comm.Kernel(DeviceType::kCPU, t, MakeKernel(SyncCommCpu));

  OpBuilder coalesce = r.Add("coalesce_tensor");
  coalesce
      .Doc(
          "Packs Input into one contiguous FusedOutput (copied when copy_data) and makes each Output a view "
          "of its part, so one collective on FusedOutput updates them all. Parts are packed without "
          "PaddlePaddle's alignment padding.")
      .Input(kInput, "The tensors to pack, all of `dtype`.", kDuplicable)
      .Output(kOutput, "Views of FusedOutput shaped like Input (usually the Input variables themselves).", kDuplicable)
      .Output(kFusedOutput, "The packed 1-D buffer.")
      .Attr("dtype", static_cast<int>(DType::kFloat32), "The element type (VarType.Type) of all inputs.")
      .Attr("copy_data", false, "Copy the inputs' values into FusedOutput.")
      .Attr("set_constant", false, "Fill FusedOutput with `constant` instead.")
      .Attr("persist_output", false, "PaddlePaddle: keep FusedOutput alive; steers nothing here.")
      .Attr("constant", 0.0f, "The value for set_constant.")
      .Attr("check_name", false, "PaddlePaddle's name check; steers nothing here.")
      .Attr("use_align", true, "PaddlePaddle aligns parts to 256 bytes on GPUs; ignored (parts are packed).")
      .Attr("align_size", -1, "Ignored, as use_align.")
      .Attr("size_of_dtype", -1, "PaddlePaddle 2's name of user_defined_size_of_dtype.")
      .Attr("user_defined_size_of_dtype", -1, "Ignored: the size of `dtype` is used.")
      .Attr("concated_shapes", std::vector<int64_t>{}, "Unused by paddlec.")
      .Attr("concated_ranks", std::vector<int64_t>{}, "Unused by paddlec.")
      .KernelDTypeFromAttr("dtype")
      .InferShape(InferCoalesce)
      .NoGradient();
  for (DType t : {DType::kFloat32, DType::kFloat64}) coalesce.Kernel(DeviceType::kCPU, t, MakeKernel(CoalesceCpu));
}

}  // namespace paddlec::ops
