// The operator registry: for every op type, its OpProto, shape function, gradient maker and
// kernels keyed by (device, dtype), all declared in one place in the op's family file.
//
// Registration is explicit: src/ops/ops.def lists the families, RegisterAllOps() calls each
// family's Register<Family>Ops(registry). A family file reads like this:
//
//   constexpr InSlot kX{0, "X"};
//   constexpr OutSlot kOut{0, "Out"};
//   r.Add("relu")
//       .Doc("Rectified linear unit: Out = max(X, 0).")
//       .Input(kX, "The input tensor.")
//       .Output(kOut, "The output tensor, shaped like X.")
//       .InferShape(InferSameAsX)
//       .Kernel(DeviceType::kCPU, DType::kFloat32, MakeKernel(ReluCpu));
//
// The registry is filled once at start-up and read-only afterwards (GlobalOpRegistry()).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "framework.pb.h"
#include "paddlec/core/dtype.h"
#include "paddlec/core/place.h"
#include "paddlec/ops/attrs.h"
#include "paddlec/ops/grad_maker.h"
#include "paddlec/ops/infer_shape.h"
#include "paddlec/ops/kernel.h"
#include "paddlec/ops/slots.h"

namespace paddlec::ops {

enum SlotFlags : unsigned {
  kNone = 0,
  kDuplicable = 1u << 0,    // takes a list of variables
  kDispensable = 1u << 1,   // may be absent
  kIntermediate = 1u << 2,  // an output only other ops of the same computation read (e.g. XShape)
  kExtra = 1u << 3,         // PaddlePaddle's "extra": dropped when saving inference models
};

/// How the dtype that selects a kernel is found for an op instance.
struct KernelDTypeRule {
  enum Kind { kFirstInput, kInput, kAttr, kFixed } kind = kFirstInput;
  int slot = 0;           // kInput: the input slot index
  std::string attr;       // kAttr: an INT attribute holding a VarType.Type
  DType fixed = DType::kFloat32;
};

/// How an op's outputs get their sequence structure (LoD). Compile time: each output's lod_level;
/// run time: each output's LoD offsets.
struct LoDRule {
  enum Kind {
    /// Outputs whose leading dim matches input `slot`'s take its lod_level and, at run time, its LoD
    /// (elementwise, fc, activations). The default, from the first input.
    kShareInput,
    /// Outputs have lod_level = input `slot`'s + `delta` (>= 0); the kernel sets the run-time LoD
    /// (sequence_pool: -1, sequence_unpad: +1).
    kKernel,
    /// Outputs are never sequences (sequence_pad, losses).
    kNone,
  } kind = kShareInput;
  int slot = 0;
  int delta = 0;
};

class OpInfo {
 public:
  const std::string& type() const { return proto_.type(); }
  const pb::OpProto& proto() const { return proto_; }
  const pb::OpProto::Attr* FindAttr(std::string_view name) const;
  int InputIndex(std::string_view slot) const;   // -1 if the op has no such input slot
  int OutputIndex(std::string_view slot) const;
  int num_inputs() const { return proto_.inputs_size(); }
  int num_outputs() const { return proto_.outputs_size(); }

  InferShapeFn infer_shape() const { return infer_shape_; }
  /// The gradient maker, or null when the op has no gradient (see no_gradient()).
  const GradMakerFn& grad_maker() const { return grad_maker_; }
  bool no_gradient() const { return no_gradient_; }
  /// For grad ops: the forward op type they differentiate; empty otherwise.
  const std::string& forward_type() const { return forward_type_; }
  /// Input slot indices that gradients never flow into (labels, ids, shapes).
  const std::vector<int>& no_grad_inputs() const { return no_grad_inputs_; }
  const KernelDTypeRule& kernel_dtype_rule() const { return kernel_dtype_; }
  const LoDRule& lod_rule() const { return lod_rule_; }
  /// True when the kernel of this op instance sets (and allocates) its outputs' run-time dims itself:
  /// ops without a shape function, and ops declared with OpBuilder::OutputDimsFromKernel whose
  /// instance binds one of the declared inputs.
  bool KernelSizesOutputs(const pb::OpDesc& op) const;

  const KernelFactory* FindKernel(DeviceType device, DType dtype) const;
  /// (device, dtype) pairs that have a kernel, sorted.
  std::vector<std::pair<DeviceType, DType>> KernelKeys() const;

 private:
  friend class OpBuilder;
  friend class OpRegistry;
  pb::OpProto proto_;
  std::unordered_map<std::string, int> attr_index_;
  InferShapeFn infer_shape_ = nullptr;
  GradMakerFn grad_maker_;
  bool no_gradient_ = false;
  std::string forward_type_;
  std::vector<int> no_grad_inputs_;
  KernelDTypeRule kernel_dtype_;
  LoDRule lod_rule_;
  bool kernel_sizes_outputs_ = false;
  std::vector<int> kernel_sizes_outputs_when_bound_;  // input slot indices; empty = always
  std::map<std::pair<int, int>, KernelFactory> kernels_;
};

/// Fluent registration of one op; every call returns *this. Misuse (a slot constant whose index
/// is not its position, a duplicate attribute) is a programming error reported by
/// OpRegistry::CheckConsistency, which the registry tests run.
class OpBuilder {
 public:
  OpBuilder(OpInfo* info, class OpRegistry* registry, std::vector<std::string>* problems)
      : info_(info), registry_(registry), problems_(problems) {}

  OpBuilder& Doc(std::string comment);
  OpBuilder& Input(InSlot slot, std::string comment, unsigned flags = kNone);
  OpBuilder& Output(OutSlot slot, std::string comment, unsigned flags = kNone);

  /// An attribute with a default value; T picks the AttrType (int -> INT, std::vector<int64_t> ->
  /// LONGS, ...). String literals are std::string.
  template <class T>
  OpBuilder& Attr(std::string name, T default_value, std::string comment) {
    return AddAttr(MakeAttr(name, default_value), std::move(comment), true);
  }
  OpBuilder& Attr(std::string name, const char* default_value, std::string comment) {
    return Attr<std::string>(std::move(name), std::string(default_value), std::move(comment));
  }
  /// An attribute every OpDesc must set.
  template <class T>
  OpBuilder& RequiredAttr(std::string name, std::string comment) {
    return AddAttr(MakeAttr(name, T{}), std::move(comment), false);
  }
  /// A BLOCK attribute (the index of a sub-block the op runs); always required.
  OpBuilder& BlockAttr(std::string name, std::string comment);
  /// Checks on the last attribute added.
  OpBuilder& Min(double v);
  OpBuilder& Max(double v);
  OpBuilder& Range(double lo, double hi) { return Min(lo).Max(hi); }
  /// Exclusive bounds (PaddlePaddle's GreaterThan / LessThan): the value must differ from `v`.
  OpBuilder& GreaterThan(double v);
  OpBuilder& LessThan(double v);
  OpBuilder& AllowedValues(std::vector<std::string> values);
  OpBuilder& AllowedInts(std::vector<int64_t> values);
  OpBuilder& NonEmpty();
  OpBuilder& ExtraAttr();  // PaddlePaddle's "extra" (backend hints such as use_cudnn)

  OpBuilder& InferShape(InferShapeFn fn);
  /// The op's run-time output dims depend on the values of input tensors (a size or padding tensor), or
  /// on the device (a backend's workspace): the kernel sets its outputs' dims and allocates them
  /// (KernelContext::ResizeOut) for every instance that binds one of `when_bound` (every instance when
  /// empty). The shape function still gives the compile-time dims, -1 where a value decides.
  OpBuilder& OutputDimsFromKernel(std::vector<InSlot> when_bound = {});
  /// Uses DefaultGradMaker (grad op `<type>_grad`, which must be registered with GradOf).
  OpBuilder& Grad();
  OpBuilder& Grad(GradMakerFn maker);
  OpBuilder& NoGradient();
  /// Gradients never flow into this input (labels, ids).
  OpBuilder& NoGradInput(InSlot slot);
  /// Declares this op as the gradient of `forward_type` (registered earlier): copies its attributes,
  /// marks every output dispensable and the op itself NoGradient. Without an explicit InferShape,
  /// each output S@GRAD takes the shape and dtype of the input S.
  OpBuilder& GradOf(std::string_view forward_type);

  /// Outputs share input `slot`'s LoD (the default shares the first input's).
  OpBuilder& ShareLoD(InSlot slot);
  /// The kernel sets the outputs' LoD; their lod_level is input `slot`'s plus `delta`.
  OpBuilder& LoDFromKernel(InSlot slot, int delta);
  /// Outputs are plain tensors, whatever the inputs' LoD.
  OpBuilder& NoLoD();

  OpBuilder& KernelDTypeFromInput(InSlot slot);
  OpBuilder& KernelDTypeFromAttr(std::string attr);
  /// For ops whose kernel does not depend on a dtype (control flow): always pick `dtype`'s kernel.
  OpBuilder& KernelDTypeFixed(DType dtype);
  OpBuilder& Kernel(DeviceType device, DType dtype, KernelFactory factory);

 private:
  OpBuilder& AddAttr(pb::OpDesc::Attr value, std::string comment, bool has_default);
  pb::OpProto::Attr* last_attr();
  OpInfo* info_;
  class OpRegistry* registry_;
  std::vector<std::string>* problems_;
};

class OpRegistry {
 public:
  OpRegistry();
  ~OpRegistry();
  OpRegistry(const OpRegistry&) = delete;
  OpRegistry& operator=(const OpRegistry&) = delete;

  /// Starts the registration of `type`.
  OpBuilder Add(std::string type);
  const OpInfo* Find(std::string_view type) const;
  /// All op infos sorted by type.
  std::vector<const OpInfo*> All() const;
  /// Attributes every op accepts (op_role, op_namescope, op_callstack, op_device, ...), which
  /// PaddlePaddle's framework adds to every OpDesc.
  const pb::OpProto::Attr* FindCommonAttr(std::string_view name) const;
  const std::vector<pb::OpProto::Attr>& common_attrs() const { return common_attrs_; }
  /// Registration mistakes (slot index mismatches, duplicate attrs, a default grad maker whose grad
  /// op is missing). Empty for a correct registry.
  std::vector<std::string> CheckConsistency() const;

  /// Lets a backend loaded later (the CUDA library) add kernels to registered ops.
  OpInfo* MutableFind(std::string_view type);
  /// Adds a kernel to a registered op (backends loaded at run time); an error for an unknown op or a
  /// (device, dtype) that already has a kernel.
  Status AddKernel(std::string_view type, DeviceType device, DType dtype, KernelFactory factory);

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, std::unique_ptr<OpInfo>, Hash, std::equal_to<>> ops_;
  std::vector<pb::OpProto::Attr> common_attrs_;
  std::vector<std::string> problems_;
};

/// Registers every op family listed in ops.def.
void RegisterAllOps(OpRegistry& registry);
/// The process's registry, filled on first use and read-only afterwards.
const OpRegistry& GlobalOpRegistry();
/// Same, for a backend adding its kernels during its one-time initialization.
OpRegistry& MutableGlobalOpRegistry();

}  // namespace paddlec::ops
