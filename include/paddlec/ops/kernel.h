// Kernels: the code that runs one op on one place for one dtype.
//
// A kernel object is created once per op instance when a plan is built (attributes decoded there,
// expensive setup such as oneDNN primitives cached there) and then run every step. KernelContext
// hands it the op's tensors, already resolved by the plan, indexed by slot constant: no string
// lookups on the hot path. Output tensors arrive with their shape set and memory allocated.
#pragma once

#include <functional>
#include <memory>
#include <span>

#include "paddlec/core/error.h"
#include "paddlec/ops/attrs.h"
#include "paddlec/ops/slots.h"
#include "paddlec/runtime/device_context.h"
#include "paddlec/runtime/scope.h"
#include "paddlec/runtime/tensor.h"

namespace paddlec::ops {

using runtime::Tensor;
using runtime::Variable;

class KernelContext {
 public:
  /// Variables bound to one slot; an entry is nullptr when its argument is @EMPTY@.
  using SlotTensors = std::span<Variable* const>;

  KernelContext(std::span<const SlotTensors> inputs, std::span<const SlotTensors> outputs,
                runtime::DeviceContext* device)
      : inputs_(inputs), outputs_(outputs), device_(device) {}

  int NumIn(InSlot s) const { return s.index < static_cast<int>(inputs_.size()) ? static_cast<int>(inputs_[s.index].size()) : 0; }
  int NumOut(OutSlot s) const { return s.index < static_cast<int>(outputs_.size()) ? static_cast<int>(outputs_[s.index].size()) : 0; }
  /// Precondition: the slot has an i-th tensor (validated, non-dispensable, or checked with NumIn).
  const Tensor& In(InSlot s, int i = 0) const { return inputs_[s.index][i]->tensor(); }
  Tensor& Out(OutSlot s, int i = 0) const { return outputs_[s.index][i]->tensor(); }
  /// nullptr when the slot is absent or the argument is @EMPTY@.
  const Tensor* InOpt(InSlot s, int i = 0) const {
    Variable* v = i < NumIn(s) ? inputs_[s.index][i] : nullptr;
    return v ? &v->tensor() : nullptr;
  }
  Tensor* OutOpt(OutSlot s, int i = 0) const {
    Variable* v = i < NumOut(s) ? outputs_[s.index][i] : nullptr;
    return v ? &v->tensor() : nullptr;
  }
  /// The variables themselves, for the few kernels that use tensor lists (feed, fetch).
  Variable* InVar(InSlot s, int i = 0) const { return i < NumIn(s) ? inputs_[s.index][i] : nullptr; }
  Variable* OutVar(OutSlot s, int i = 0) const { return i < NumOut(s) ? outputs_[s.index][i] : nullptr; }

  /// For kernels that size their outputs (OpBuilder::OutputDimsFromKernel): gives output `s` its
  /// dtype and dims and memory for them (the current buffer is kept when it fits).
  Status ResizeOut(OutSlot s, const Dims& dims, DType dtype, int i = 0) const {
    Tensor& t = Out(s, i);
    t.Set(dtype, dims);
    return t.Allocate(device_->allocator());
  }

  runtime::DeviceContext& device() const { return *device_; }
  template <class C>
  C& device_as() const {
    return static_cast<C&>(*device_);
  }

 private:
  std::span<const SlotTensors> inputs_;
  std::span<const SlotTensors> outputs_;
  runtime::DeviceContext* device_;
};

class OpKernel {
 public:
  virtual ~OpKernel() = default;
  virtual Status Run(KernelContext& ctx) = 0;
  /// False for kernels whose Run cannot be recorded once and replayed (CUDA graphs): those that wait
  /// for the device, copy from pageable host memory, or change their launch arguments every run
  /// (random draws counting steps).
  virtual bool Replayable() const { return true; }
};

/// Runs one sub-block of the program (control-flow ops). Built by the runtime, which owns plans:
/// the ops layer cannot build them itself.
class SubBlockRunner {
 public:
  virtual ~SubBlockRunner() = default;
  /// Runs every op of the sub-block once, in a child scope of the plan's scope that persists
  /// between runs (variables of enclosing blocks resolve to the enclosing scopes).
  virtual Status Run() = 0;
};
using SubBlockFactory = std::function<StatusOr<std::unique_ptr<SubBlockRunner>>(int block_idx)>;
/// Builds a runner of one sub-block over a scope the kernel chooses (a loop's per-step scopes, which
/// its gradient revisits); the scope must outlive the runner.
using ScopedSubBlockFactory =
    std::function<StatusOr<std::unique_ptr<SubBlockRunner>>(int block_idx, runtime::Scope& scope)>;

/// What a kernel factory sees of its op instance.
struct KernelInit {
  const AttrReader& attrs;
  /// A seed unique to this op instance, derived from the program's seed; random kernels use it when
  /// their own `seed` attribute is 0, so a fixed program seed gives reproducible runs.
  uint64_t seed;
  runtime::DeviceContext* device;
  /// Builds runners for the program's other blocks (null outside a plan).
  const SubBlockFactory* sub_blocks = nullptr;
  /// The number of steps run before this plan (a resumed training run): random kernels start their
  /// step counters here, so a resumed run draws exactly what an uninterrupted one would.
  uint64_t start_step = 0;
  /// Control flow that keeps scopes of its own (while's step scopes): the plan's scope, under which
  /// they are made, and runners over them (null outside a plan).
  runtime::Scope* scope = nullptr;
  const ScopedSubBlockFactory* scoped_sub_blocks = nullptr;
};

using KernelFactory = std::function<StatusOr<std::unique_ptr<OpKernel>>(const KernelInit&)>;

namespace internal {
template <class Attrs>
class FnKernel final : public OpKernel {
 public:
  using Fn = Status (*)(KernelContext&, const Attrs&);
  FnKernel(Fn fn, Attrs attrs) : fn_(fn), attrs_(std::move(attrs)) {}
  Status Run(KernelContext& ctx) override { return fn_(ctx, attrs_); }

 private:
  Fn fn_;
  Attrs attrs_;
};

class PlainFnKernel final : public OpKernel {
 public:
  using Fn = Status (*)(KernelContext&);
  explicit PlainFnKernel(Fn fn) : fn_(fn) {}
  Status Run(KernelContext& ctx) override { return fn_(ctx); }

 private:
  Fn fn_;
};
}  // namespace internal

/// A kernel from a function and an attribute struct with `static Attrs Decode(const AttrReader&)`.
template <class Attrs>
KernelFactory MakeKernel(Status (*fn)(KernelContext&, const Attrs&)) {
  return [fn](const KernelInit& init) -> StatusOr<std::unique_ptr<OpKernel>> {
    return std::unique_ptr<OpKernel>(new internal::FnKernel<Attrs>(fn, Attrs::Decode(init.attrs)));
  };
}

/// A kernel from a function that needs no attributes.
inline KernelFactory MakeKernel(Status (*fn)(KernelContext&)) {
  return [fn](const KernelInit&) -> StatusOr<std::unique_ptr<OpKernel>> {
    return std::unique_ptr<OpKernel>(new internal::PlainFnKernel(fn));
  };
}

/// A kernel class K with a constructor K(const KernelInit&) and `Status Run(KernelContext&)`.
template <class K>
KernelFactory MakeKernelClass() {
  return [](const KernelInit& init) -> StatusOr<std::unique_ptr<OpKernel>> {
    return std::unique_ptr<OpKernel>(new K(init));
  };
}

}  // namespace paddlec::ops
