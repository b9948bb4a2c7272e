// The collective ops' slots and decoded attributes, shared by collective.cc (CPU, MPI) and
// collective_cuda.cc (GPU, NCCL).
#pragma once

#include <vector>

#include "paddlec/ops/op_registry.h"
#include "paddlec/runtime/comm.h"

namespace paddlec::ops::collective {

constexpr InSlot kX{0, "X"};
constexpr OutSlot kOut{0, "Out"};
// PaddlePaddle 3's all_reduce and broadcast name their slots in lower case.
constexpr InSlot kLowerX{0, "x"};
constexpr OutSlot kLowerOut{0, "out"};
// coalesce_tensor's
constexpr InSlot kInput{0, "Input"};
constexpr OutSlot kOutput{0, "Output"};
constexpr OutSlot kFusedOutput{1, "FusedOutput"};

/// The attributes every collective reads: which communicator (ring) and, for broadcast, the root.
struct CommAttrs {
  int ring_id = 0;
  int root = 0;
  int nranks = 1;
  int reduce_type = 0;  // all_reduce: PaddlePaddle's ReduceType, 0 sum, 1 max, 2 min, 3 prod, 4 avg
  // false: the collective may run while later ops compute, until the ring's c_sync_comm_stream.
  bool use_calc_stream = true;
  static CommAttrs Decode(const AttrReader& a) {
    CommAttrs c;
    c.ring_id = a.Get<int>("ring_id");
    if (a.Has("use_calc_stream")) c.use_calc_stream = a.Get<bool>("use_calc_stream");
    if (a.Has("root")) c.root = a.Get<int>("root");
    if (a.Has("nranks")) c.nranks = a.Get<int>("nranks");
    if (a.Has("reduce_type")) c.reduce_type = a.Get<int>("reduce_type");
    return c;
  }
};

inline constexpr int kReduceAvg = 4;
/// all_reduce's reduction (avg sums, then divides).
inline runtime::ReduceOp ReduceOf(int reduce_type) {
  switch (reduce_type) {
    case 1:
      return runtime::ReduceOp::kMax;
    case 2:
      return runtime::ReduceOp::kMin;
    case 3:
      return runtime::ReduceOp::kProd;
    default:
      return runtime::ReduceOp::kSum;
  }
}

/// paddlec creates one communicator per process, over all ranks: Paddle's ring 0.
inline Status CheckRing(int ring_id, std::string_view op) {
  if (ring_id == 0) return Status::OK();
  return MakeError(ErrorCode::kUnimplemented, "{}: ring_id {} has no communicator", op, ring_id)
      .Note(
          "paddlec creates one communicator per process, ring 0 over all ranks (model-parallel rings are not "
          "supported)");
}

struct CoalesceAttrs {
  bool copy_data = false, set_constant = false;
  float constant = 0;
  static CoalesceAttrs Decode(const AttrReader& a) {
    return {a.Get<bool>("copy_data"), a.Get<bool>("set_constant"), a.Get<float>("constant")};
  }
};

/// Makes output `i` of coalesce_tensor a view of `fused` at element `offset`, shaped like `dims`.
inline void BindView(Tensor& out, const Tensor& fused, const Dims& dims, DType dtype, int64_t offset) {
  size_t base = static_cast<size_t>(static_cast<const char*>(fused.raw_data()) -
                                    static_cast<const char*>(fused.buffer()->data()));
  out.Set(dtype, dims);
  out.set_buffer(fused.buffer(), base + static_cast<size_t>(offset) * SizeOf(dtype));
}

}  // namespace paddlec::ops::collective
