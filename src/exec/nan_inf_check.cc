// The NaN/Inf check's kernel wrapper: run the op, then scan its floating-point outputs.
#include "nan_inf_check.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include "paddlec/ir/op_role.h"
#include "paddlec/runtime/allocator.h"

namespace paddlec::exec {
namespace {

using runtime::Tensor;

/// The first non-finite element of a tensor in host memory: its flat index and its value as text.
struct BadElement {
  int64_t index;
  std::string value;
};

/// The unsigned integer type as wide as T, and T's exponent field: all ones means Inf or NaN.
template <class T>
struct FloatBits;
template <>
struct FloatBits<float> {
  using U = uint32_t;
  static constexpr U kExponent = 0x7F800000u;
};
template <>
struct FloatBits<double> {
  using U = uint64_t;
  static constexpr U kExponent = 0x7FF0000000000000ull;
};

template <class T>
std::optional<BadElement> FirstNonFiniteFloat(const T* x, int64_t n) {
  using U = typename FloatBits<T>::U;
  constexpr U kExponent = FloatBits<T>::kExponent;
  // Chunks reduced branch-free (the largest exponent field: vectorized), then the one holding a
  // bad element searched.
  constexpr int64_t kChunk = 4096;
  for (int64_t begin = 0; begin < n; begin += kChunk) {
    const int64_t end = std::min(n, begin + kChunk);
    U largest = 0;
    for (int64_t i = begin; i < end; ++i) largest = std::max(largest, std::bit_cast<U>(x[i]) & kExponent);
    if (largest != kExponent) continue;
    for (int64_t i = begin; i < end; ++i)
      if (!std::isfinite(x[i])) return BadElement{i, fmt::format("{}", x[i])};
  }
  return std::nullopt;
}

/// float16 and bfloat16 by their bits: all-ones exponent is Inf (zero mantissa) or NaN.
std::optional<BadElement> FirstNonFiniteHalf(const uint16_t* x, int64_t n, uint16_t exponent, uint16_t mantissa) {
  for (int64_t i = 0; i < n; ++i) {
    if ((x[i] & exponent) != exponent) continue;
    std::string value = (x[i] & mantissa) != 0 ? "nan" : (x[i] & 0x8000) != 0 ? "-inf" : "inf";
    return BadElement{i, value};
  }
  return std::nullopt;
}

std::optional<BadElement> FirstNonFinite(const Tensor& host) {
  const int64_t n = host.numel();
  switch (host.dtype()) {
    case DType::kFloat32:
      return FirstNonFiniteFloat(host.data<float>(), n);
    case DType::kFloat64:
      return FirstNonFiniteFloat(host.data<double>(), n);
    case DType::kFloat16:
      return FirstNonFiniteHalf(static_cast<const uint16_t*>(host.raw_data()), n, 0x7C00, 0x03FF);
    case DType::kBFloat16:
      return FirstNonFiniteHalf(static_cast<const uint16_t*>(host.raw_data()), n, 0x7F80, 0x007F);
    default:
      return std::nullopt;
  }
}

/// "[1, 4]": the multi-index of flat element `index` in a row-major tensor of `dims`.
std::string MultiIndex(const Dims& dims, int64_t index) {
  std::vector<int64_t> at(static_cast<size_t>(dims.rank()));
  for (int d = dims.rank() - 1; d >= 0; --d) {
    const int64_t size = std::max<int64_t>(dims[d], 1);
    at[d] = index % size;
    index /= size;
  }
  return fmt::format("[{}]", fmt::join(at, ", "));
}

std::string_view RoleName(const ir::pb::OpDesc& desc) {
  const int role = ir::OpRoleOf(desc);
  if (role & ir::kOpRoleBackward) return "backward";
  if (role & (ir::kOpRoleOptimize | ir::kOpRoleLRSched)) return "optimizer";
  return "forward";
}

class NanInfCheckedKernel final : public ops::OpKernel {
 public:
  NanInfCheckedKernel(std::unique_ptr<ops::OpKernel> inner, const ops::OpInfo& info, const ir::pb::OpDesc& desc)
      : inner_(std::move(inner)), info_(info), desc_(desc) {}

  Status Run(ops::KernelContext& ctx) override {
    PC_RETURN_IF_ERROR(inner_->Run(ctx));
    const auto& proto = info_.proto();
    for (int s = 0; s < proto.outputs_size(); ++s) {
      const ops::OutSlot slot{s, proto.outputs(s).name()};
      for (int k = 0; k < ctx.NumOut(slot); ++k) {
        const Tensor* t = ctx.OutOpt(slot, k);
        if (t == nullptr) continue;
        PC_ASSIGN_OR_RETURN(std::optional<BadElement> bad, Scan(ctx, *t));
        if (bad) return Report(ctx, proto.outputs(s).name(), k, *t, *bad);
      }
    }
    return Status::OK();
  }

  bool Replayable() const override { return false; }  // the scan reads outputs on the host

 private:
  StatusOr<std::optional<BadElement>> Scan(ops::KernelContext& ctx, const Tensor& t) {
    if (!IsFloating(t.dtype()) || !t.initialized() || t.numel() == 0) return std::optional<BadElement>();
    if (!t.place().is_cuda()) return FirstNonFinite(t);
    Tensor host;
    PC_RETURN_IF_ERROR(ctx.device().CopyToHost(t, host, *host_alloc_));
    return FirstNonFinite(host);
  }

  std::string Argument(bool input, const std::string& slot, int k) const {
    for (const auto& v : input ? desc_.inputs() : desc_.outputs())
      if (v.parameter() == slot && k < v.arguments_size()) return v.arguments(k);
    return "";
  }

  Error Report(ops::KernelContext& ctx, const std::string& slot, int k, const Tensor& t, const BadElement& bad) {
    const std::string var = Argument(false, slot, k);
    Error e = MakeError(ErrorCode::kRuntime,
                        "{} op '{}' produced a non-finite value: output '{}' (variable '{}', {} {}) holds {} at "
                        "element {} {}",
                        RoleName(desc_), desc_.type(), slot, var, DTypeName(t.dtype()), t.dims().ToString(), bad.value,
                        bad.index, MultiIndex(t.dims(), bad.index));
    e.mutable_location().var = var;
    // Where it came from: an input that was already bad was fed or loaded so (every op before this
    // one was checked); finite inputs mean this op overflowed or divided by zero.
    // Inputs the op updates in place (an optimizer's Param) hold its output now: not counted.
    const auto& proto = info_.proto();
    std::vector<const runtime::Variable*> outputs;
    for (int s = 0; s < proto.outputs_size(); ++s)
      for (int k = 0; k < ctx.NumOut(ops::OutSlot{s, ""}); ++k) outputs.push_back(ctx.OutVar(ops::OutSlot{s, ""}, k));
    for (int s = 0; s < proto.inputs_size(); ++s) {
      const ops::InSlot in{s, proto.inputs(s).name()};
      for (int i = 0; i < ctx.NumIn(in); ++i) {
        const runtime::Variable* v = ctx.InVar(in, i);
        if (v == nullptr || std::find(outputs.begin(), outputs.end(), v) != outputs.end()) continue;
        const Tensor* x = &v->tensor();
        auto scanned = Scan(ctx, *x);
        if (!scanned.ok() || !*scanned) continue;
        e.Note(fmt::format(
            "its input '{}' (variable '{}') already holds {} at element {}: it was fed, loaded or left "
            "so by an earlier run, not computed by a checked op",
            proto.inputs(s).name(), Argument(true, proto.inputs(s).name(), i), (*scanned)->value, (*scanned)->index));
        return e;
      }
    }
    e.Note(
        "its inputs are finite: the op itself overflowed or divided by zero (a learning rate too high, log(0), "
        "x/0)");
    return e;
  }

  std::unique_ptr<ops::OpKernel> inner_;
  const ops::OpInfo& info_;
  const ir::pb::OpDesc& desc_;
  std::shared_ptr<runtime::Allocator> host_alloc_ = runtime::CpuCachingAllocator::Create(size_t{64} << 20);
};

}  // namespace

std::unique_ptr<ops::OpKernel> CheckNanInfAfter(std::unique_ptr<ops::OpKernel> kernel, const ops::OpInfo& info,
                                                const ir::pb::OpDesc& desc) {
  return std::make_unique<NanInfCheckedKernel>(std::move(kernel), info, desc);
}

}  // namespace paddlec::exec
