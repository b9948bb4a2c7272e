// OpInfo, OpBuilder and the registry.
#include "paddlec/ops/op_registry.h"

#include <algorithm>

#include "paddlec/ir/program.h"

namespace paddlec::ops {

// ---- OpInfo ---------------------------------------------------------------------------------

const pb::OpProto::Attr* OpInfo::FindAttr(std::string_view name) const {
  auto it = attr_index_.find(std::string(name));
  return it == attr_index_.end() ? nullptr : &proto_.attrs(it->second);
}

int OpInfo::InputIndex(std::string_view slot) const {
  for (int i = 0; i < proto_.inputs_size(); ++i)
    if (proto_.inputs(i).name() == slot) return i;
  return -1;
}

int OpInfo::OutputIndex(std::string_view slot) const {
  for (int i = 0; i < proto_.outputs_size(); ++i)
    if (proto_.outputs(i).name() == slot) return i;
  return -1;
}

const KernelFactory* OpInfo::FindKernel(DeviceType device, DType dtype) const {
  auto it = kernels_.find({static_cast<int>(device), static_cast<int>(dtype)});
  return it == kernels_.end() ? nullptr : &it->second;
}

bool OpInfo::KernelSizesOutputs(const pb::OpDesc& op) const {
  if (infer_shape_ == nullptr) return true;
  if (!kernel_sizes_outputs_) return false;
  if (kernel_sizes_outputs_when_bound_.empty()) return true;
  for (int index : kernel_sizes_outputs_when_bound_)
    for (const auto& slot : op.inputs())
      if (slot.parameter() == proto_.inputs(index).name())
        for (const auto& arg : slot.arguments())
          if (!arg.empty() && arg != ir::kEmptyVarName) return true;
  return false;
}

std::vector<std::pair<DeviceType, DType>> OpInfo::KernelKeys() const {
  std::vector<std::pair<DeviceType, DType>> out;
  for (const auto& [k, f] : kernels_) out.emplace_back(static_cast<DeviceType>(k.first), static_cast<DType>(k.second));
  return out;
}

// ---- OpBuilder ------------------------------------------------------------------------------

static void FillVar(pb::OpProto::Var* v, std::string_view name, std::string comment, unsigned flags) {
  v->set_name(std::string(name));
  v->set_comment(std::move(comment));
  if (flags & kDuplicable) v->set_duplicable(true);
  if (flags & kDispensable) v->set_dispensable(true);
  if (flags & kIntermediate) v->set_intermediate(true);
  if (flags & kExtra) v->set_extra(true);
}

OpBuilder& OpBuilder::Doc(std::string comment) {
  info_->proto_.set_comment(std::move(comment));
  return *this;
}

OpBuilder& OpBuilder::Input(InSlot slot, std::string comment, unsigned flags) {
  if (slot.index != info_->proto_.inputs_size())
    problems_->push_back(fmt::format("{}: input slot {} has index {} but is declared at position {}",
                                     info_->type(), slot.name, slot.index, info_->proto_.inputs_size()));
  FillVar(info_->proto_.add_inputs(), slot.name, std::move(comment), flags);
  return *this;
}

OpBuilder& OpBuilder::Output(OutSlot slot, std::string comment, unsigned flags) {
  if (slot.index != info_->proto_.outputs_size())
    problems_->push_back(fmt::format("{}: output slot {} has index {} but is declared at position {}",
                                     info_->type(), slot.name, slot.index, info_->proto_.outputs_size()));
  if (!info_->forward_type_.empty()) flags |= kDispensable;  // a grad op may skip any gradient
  FillVar(info_->proto_.add_outputs(), slot.name, std::move(comment), flags);
  return *this;
}

OpBuilder& OpBuilder::AddAttr(pb::OpDesc::Attr value, std::string comment, bool has_default) {
  const std::string name = value.name();
  if (info_->attr_index_.count(name)) {
    // GradOf copies the forward's attributes; re-declaring one replaces it.
    pb::OpProto::Attr* a = info_->proto_.mutable_attrs(info_->attr_index_[name]);
    if (info_->forward_type_.empty())
      problems_->push_back(fmt::format("{}: attribute {} declared twice", info_->type(), name));
    a->Clear();
    a->set_name(name);
    a->set_type(value.type());
    a->set_comment(std::move(comment));
    if (has_default) *a->mutable_default_value() = std::move(value);
    return *this;
  }
  pb::OpProto::Attr* a = info_->proto_.add_attrs();
  a->set_name(name);
  a->set_type(value.type());
  a->set_comment(std::move(comment));
  if (has_default) *a->mutable_default_value() = std::move(value);
  info_->attr_index_[name] = info_->proto_.attrs_size() - 1;
  return *this;
}

pb::OpProto::Attr* OpBuilder::last_attr() {
  if (info_->proto_.attrs_size() == 0) {
    problems_->push_back(fmt::format("{}: attribute check before any attribute", info_->type()));
    static pb::OpProto::Attr scratch;
    return &scratch;
  }
  return info_->proto_.mutable_attrs(info_->proto_.attrs_size() - 1);
}

OpBuilder& OpBuilder::BlockAttr(std::string name, std::string comment) {
  pb::OpDesc::Attr a;
  a.set_name(name);
  a.set_type(pb::BLOCK);
  return AddAttr(std::move(a), std::move(comment), false);
}

OpBuilder& OpBuilder::Min(double v) {
  last_attr()->set_min(v);
  return *this;
}
OpBuilder& OpBuilder::Max(double v) {
  last_attr()->set_max(v);
  return *this;
}
OpBuilder& OpBuilder::GreaterThan(double v) {
  last_attr()->set_min(v);
  last_attr()->set_min_exclusive(true);
  return *this;
}
OpBuilder& OpBuilder::LessThan(double v) {
  last_attr()->set_max(v);
  last_attr()->set_max_exclusive(true);
  return *this;
}
OpBuilder& OpBuilder::AllowedValues(std::vector<std::string> values) {
  auto* a = last_attr();
  for (auto& v : values) a->add_allowed_strings(std::move(v));
  return *this;
}
OpBuilder& OpBuilder::AllowedInts(std::vector<int64_t> values) {
  auto* a = last_attr();
  for (int64_t v : values) a->add_allowed_ints(v);
  return *this;
}
OpBuilder& OpBuilder::NonEmpty() {
  last_attr()->set_non_empty(true);
  return *this;
}
OpBuilder& OpBuilder::ExtraAttr() {
  last_attr()->set_extra(true);
  return *this;
}

OpBuilder& OpBuilder::InferShape(InferShapeFn fn) {
  info_->infer_shape_ = fn;
  return *this;
}

OpBuilder& OpBuilder::Grad() {
  info_->grad_maker_ = DefaultGradMaker;
  return *this;
}

OpBuilder& OpBuilder::Grad(GradMakerFn maker) {
  info_->grad_maker_ = std::move(maker);
  return *this;
}

OpBuilder& OpBuilder::OutputDimsFromKernel(std::vector<InSlot> when_bound) {
  info_->kernel_sizes_outputs_ = true;
  for (InSlot slot : when_bound) info_->kernel_sizes_outputs_when_bound_.push_back(slot.index);
  return *this;
}

OpBuilder& OpBuilder::NoGradient() {
  info_->no_gradient_ = true;
  info_->grad_maker_ = nullptr;
  return *this;
}

OpBuilder& OpBuilder::NoGradInput(InSlot slot) {
  info_->no_grad_inputs_.push_back(slot.index);
  return *this;
}

namespace {
Status InferGradLikeInputs(InferShapeContext& ctx);
}  // namespace

OpBuilder& OpBuilder::GradOf(std::string_view forward_type) {
  info_->forward_type_ = std::string(forward_type);
  const OpInfo* fwd = registry_->Find(forward_type);
  if (fwd == nullptr) {
    problems_->push_back(fmt::format("{}: GradOf({}) before {} is registered", info_->type(), forward_type,
                                     forward_type));
  } else {
    for (const auto& a : fwd->proto().attrs()) {
      if (info_->attr_index_.count(a.name())) continue;
      *info_->proto_.add_attrs() = a;
      info_->attr_index_[a.name()] = info_->proto_.attrs_size() - 1;
    }
  }
  info_->no_gradient_ = true;
  if (info_->infer_shape_ == nullptr) info_->infer_shape_ = InferGradLikeInputs;
  return *this;
}

OpBuilder& OpBuilder::ShareLoD(InSlot slot) {
  info_->lod_rule_ = {LoDRule::kShareInput, slot.index, 0};
  return *this;
}

OpBuilder& OpBuilder::LoDFromKernel(InSlot slot, int delta) {
  info_->lod_rule_ = {LoDRule::kKernel, slot.index, delta};
  return *this;
}

OpBuilder& OpBuilder::NoLoD() {
  info_->lod_rule_ = {LoDRule::kNone, 0, 0};
  return *this;
}

OpBuilder& OpBuilder::KernelDTypeFromInput(InSlot slot) {
  info_->kernel_dtype_ = {KernelDTypeRule::kInput, slot.index, "", DType::kFloat32};
  return *this;
}

OpBuilder& OpBuilder::KernelDTypeFromAttr(std::string attr) {
  info_->kernel_dtype_ = {KernelDTypeRule::kAttr, 0, std::move(attr), DType::kFloat32};
  return *this;
}

OpBuilder& OpBuilder::KernelDTypeFixed(DType dtype) {
  info_->kernel_dtype_ = {KernelDTypeRule::kFixed, 0, "", dtype};
  return *this;
}

OpBuilder& OpBuilder::Kernel(DeviceType device, DType dtype, KernelFactory factory) {
  auto key = std::make_pair(static_cast<int>(device), static_cast<int>(dtype));
  if (info_->kernels_.count(key))
    problems_->push_back(fmt::format("{}: two kernels for ({}, {})", info_->type(), DeviceTypeName(device),
                                     DTypeName(dtype)));
  info_->kernels_[key] = std::move(factory);
  return *this;
}

// ---- Default shape function of grad ops -----------------------------------------------------

namespace {

/// Each output S@GRAD takes the dims and dtype of input S (the i-th variable for duplicables).
Status InferGradLikeInputs(InferShapeContext& ctx) {
  const OpInfo* info = ctx.attrs().info();
  if (info == nullptr) return Status::OK();
  const pb::OpProto& proto = info->proto();
  for (int o = 0; o < proto.outputs_size(); ++o) {
    const std::string& name = proto.outputs(o).name();
    if (!name.ends_with(ir::kGradSuffix)) continue;
    std::string_view base = std::string_view(name).substr(0, name.size() - ir::kGradSuffix.size());
    int in = info->InputIndex(base);
    if (in < 0) continue;
    InSlot src{in, proto.inputs(in).name()};
    OutSlot dst{o, name};
    for (int i = 0; i < ctx.NumOutputs(dst) && i < ctx.NumInputs(src); ++i)
      ctx.SetOutput(dst, i, ctx.InputDims(src, i), ctx.InputDType(src, i));
  }
  return Status::OK();
}

}  // namespace

// ---- OpRegistry -----------------------------------------------------------------------------

OpRegistry::OpRegistry() {
  auto common = [&](pb::OpDesc::Attr def, const char* comment) {
    pb::OpProto::Attr a;
    a.set_name(def.name());
    a.set_type(def.type());
    a.set_comment(comment);
    a.set_extra(true);
    *a.mutable_default_value() = std::move(def);
    common_attrs_.push_back(std::move(a));
  };
  common(MakeAttr("op_role", 0), "Role of the op: forward 0, backward 1, optimize 2, loss 0x100 (bit flags).");
  common(MakeAttr("op_role_var", std::vector<std::string>{}), "Pairs [parameter, gradient] an op updates.");
  common(MakeAttr("op_namescope", std::string("/")), "Name scope the op was created in.");
  common(MakeAttr("op_callstack", std::vector<std::string>{}), "Python call stack that created the op.");
  common(MakeAttr("op_device", std::string()), "Device the op was pinned to.");
  common(MakeAttr("with_quant_attr", false), "Whether the op carries quantization attributes.");
  common(MakeAttr("use_mkldnn", false), "PaddlePaddle backend hint; ignored.");
  common(MakeAttr("use_cudnn", false), "PaddlePaddle backend hint; ignored.");
  common(MakeAttr("mkldnn_data_type", std::string("float32")), "PaddlePaddle backend hint; ignored.");
  common(MakeAttr("use_quantizer", false), "PaddlePaddle backend hint; ignored.");
  // Paddle 3's names for use_mkldnn / mkldnn_data_type, written on every op of a legacy program.
  common(MakeAttr("use_onednn", false), "PaddlePaddle backend hint (oneDNN kernels); ignored.");
  common(MakeAttr("onednn_data_type", std::string()), "PaddlePaddle backend hint (oneDNN precision); ignored.");
}

OpRegistry::~OpRegistry() = default;

OpBuilder OpRegistry::Add(std::string type) {
  auto& slot = ops_[type];
  if (slot) problems_.push_back(fmt::format("op {} registered twice", type));
  slot = std::make_unique<OpInfo>();
  slot->proto_.set_type(type);
  slot->proto_.set_comment("");
  return OpBuilder(slot.get(), this, &problems_);
}

const OpInfo* OpRegistry::Find(std::string_view type) const {
  auto it = ops_.find(type);
  return it == ops_.end() ? nullptr : it->second.get();
}

OpInfo* OpRegistry::MutableFind(std::string_view type) {
  auto it = ops_.find(type);
  return it == ops_.end() ? nullptr : it->second.get();
}

Status OpRegistry::AddKernel(std::string_view type, DeviceType device, DType dtype, KernelFactory factory) {
  OpInfo* info = MutableFind(type);
  if (info == nullptr) return MakeError(ErrorCode::kInternal, "cannot add a kernel to unknown op '{}'", type);
  auto key = std::make_pair(static_cast<int>(device), static_cast<int>(dtype));
  if (info->kernels_.count(key))
    return MakeError(ErrorCode::kInternal, "op '{}' already has a {} kernel for {}", type, DeviceTypeName(device),
                     DTypeName(dtype));
  info->kernels_[key] = std::move(factory);
  return Status::OK();
}

std::vector<const OpInfo*> OpRegistry::All() const {
  std::vector<const OpInfo*> out;
  out.reserve(ops_.size());
  for (const auto& [k, v] : ops_) out.push_back(v.get());
  std::sort(out.begin(), out.end(), [](const OpInfo* a, const OpInfo* b) { return a->type() < b->type(); });
  return out;
}

const pb::OpProto::Attr* OpRegistry::FindCommonAttr(std::string_view name) const {
  for (const auto& a : common_attrs_)
    if (a.name() == name) return &a;
  return nullptr;
}

std::vector<std::string> OpRegistry::CheckConsistency() const {
  std::vector<std::string> out = problems_;
  for (const OpInfo* info : All()) {
    if (!info->forward_type().empty() && Find(info->forward_type()) == nullptr)
      out.push_back(fmt::format("{}: GradOf names unknown op {}", info->type(), info->forward_type()));
    if (info->grad_maker_ && info->grad_maker_.target<Status (*)(GradMakerContext&)>() != nullptr &&
        *info->grad_maker_.target<Status (*)(GradMakerContext&)>() == &DefaultGradMaker) {
      const OpInfo* g = Find(info->type() + "_grad");
      if (g == nullptr) out.push_back(fmt::format("{}: default gradient needs op {}_grad", info->type(), info->type()));
      else if (g->forward_type() != info->type())
        out.push_back(fmt::format("{}_grad is not declared GradOf({})", info->type(), info->type()));
    }
    for (const auto& a : info->proto().attrs()) {
      if (a.has_default_value() && !AttrTypeCompatible(a.default_value().type(), a.type()))
        out.push_back(fmt::format("{}: attribute {} default has the wrong type", info->type(), a.name()));
      if (FindCommonAttr(a.name()) != nullptr && a.name() != "use_cudnn" && a.name() != "use_mkldnn")
        out.push_back(fmt::format("{}: attribute {} shadows a common attribute", info->type(), a.name()));
    }
  }
  return out;
}

}  // namespace paddlec::ops
