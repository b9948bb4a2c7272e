// The pd_op -> legacy op translation table (grammar: pir_op_table.h) and its parser.
//
// Slot and attribute names are PaddlePaddle's legacy ones (paddle_format.md §4; op_compat's maps).
// Rows for ops that are not registered yet translate fine and then fail validation with the usual
// unknown-op error, so the table can run ahead of the registry.
#include "pir_op_table.h"

#include <algorithm>

namespace paddlec::ir::pir {
namespace {

constexpr TableRow kRows[] = {
    // ---- linear algebra, elementwise ---------------------------------------------------------
    {"pd_op.matmul", "matmul_v2", "X, Y -> Out", "transpose_x>trans_x transpose_y>trans_y"},
    {"pd_op.add", "elementwise_add", "X, Y -> Out", "axis=-1:int"},
    {"pd_op.subtract", "elementwise_sub", "X, Y -> Out", "axis=-1:int"},
    {"pd_op.multiply", "elementwise_mul", "X, Y -> Out", "axis=-1:int"},
    {"pd_op.divide", "elementwise_div", "X, Y -> Out", "axis=-1:int"},
    {"pd_op.maximum", "elementwise_max", "X, Y -> Out", "axis=-1:int"},
    {"pd_op.minimum", "elementwise_min", "X, Y -> Out", "axis=-1:int"},
    {"pd_op.elementwise_pow", "elementwise_pow", "X, Y -> Out", "axis=-1:int"},
    {"pd_op.scale", "scale", "X, @scale:float|ScaleTensor -> Out"},
    {"pd_op.add_n", "sum", "X[] -> Out"},
    {"pd_op.sum", "reduce_sum", "X, @dim:ints -> Out", "keepdim>keep_dim dtype>out_dtype:vartype"},
    {"pd_op.mean", "reduce_mean", "X, @dim:ints -> Out", "keepdim>keep_dim"},
    {"pd_op.max", "reduce_max", "X, @dim:ints -> Out", "keepdim>keep_dim"},
    {"pd_op.min", "reduce_min", "X, @dim:ints -> Out", "keepdim>keep_dim"},
    {"pd_op.prod", "reduce_prod", "X, @dim:ints -> Out", "keepdim>keep_dim reduce_all"},
    {"pd_op.mean_all", "mean", "X -> Out"},
    {"pd_op.cumsum", "cumsum", "X, @axis:int -> Out"},
    {"pd_op.argmax", "arg_max", "X, @axis:long -> Out", "dtype:vartype"},
    {"pd_op.cos_sim", "cos_sim", "X, Y -> Out, XNorm, YNorm"},

    // ---- activations -------------------------------------------------------------------------
    {"pd_op.relu", "relu", "X -> Out"},
    {"pd_op.relu_", "relu", "X -> Out=X"},
    {"pd_op.relu6", "relu6", "X -> Out"},
    {"pd_op.sigmoid", "sigmoid", "X -> Out"},
    {"pd_op.tanh", "tanh", "X -> Out"},
    {"pd_op.exp", "exp", "X -> Out"},
    {"pd_op.log", "log", "X -> Out"},
    {"pd_op.sqrt", "sqrt", "X -> Out"},
    {"pd_op.square", "square", "X -> Out"},
    {"pd_op.abs", "abs", "X -> Out"},
    {"pd_op.silu", "silu", "X -> Out"},
    {"pd_op.swish", "swish", "X -> Out"},
    {"pd_op.hardswish", "hard_swish", "X -> Out"},
    {"pd_op.hardsigmoid", "hard_sigmoid", "X -> Out"},
    {"pd_op.elu", "elu", "X -> Out", "alpha:float"},
    {"pd_op.gelu", "gelu", "X -> Out"},
    {"pd_op.leaky_relu", "leaky_relu", "X -> Out", "negative_slope>alpha:float"},
    {"pd_op.pow", "pow", "X -> Out", "y>factor:float"},
    {"pd_op.clip", "clip", "X, @min:float|Min, @max:float|Max -> Out"},
    {"pd_op.softmax", "softmax", "X -> Out"},
    {"pd_op.log_softmax", "log_softmax", "X -> Out"},

    // ---- neural network layers ---------------------------------------------------------------
    {"pd_op.conv2d", "conv2d", "Input, Filter -> Output"},
    {"pd_op.depthwise_conv2d", "depthwise_conv2d", "Input, Filter -> Output"},
    {"pd_op.conv2d_transpose", "conv2d_transpose", "Input, Filter, @output_size:ints -> Output"},
    {"pd_op.pool2d", "pool2d", "X, @ksize:ints -> Out", "strides:ints paddings:ints"},
    {"pd_op.batch_norm_", "batch_norm",
     "X, Mean, Variance, Scale, Bias -> Y, MeanOut=Mean, VarianceOut=Variance, SavedMean, SavedVariance, ReserveSpace",
     "data_format>data_layout"},
    {"pd_op.batch_norm", "batch_norm",
     "X, Mean, Variance, Scale, Bias -> Y, MeanOut=Mean, VarianceOut=Variance, SavedMean, SavedVariance, ReserveSpace",
     "data_format>data_layout"},
    {"pd_op.layer_norm", "layer_norm", "X, Scale, Bias -> Y, Mean, Variance"},
    {"pd_op.dropout", "dropout", "X, Seed, @dropout_prob:float -> Out, Mask", "mode>dropout_implementation"},
    {"pd_op.embedding", "lookup_table_v2", "Ids, W -> Out", "sparse>is_sparse"},
    {"pd_op.pad3d", "pad3d", "X, @paddings:ints|Paddings -> Out", "pad_value>value:float"},
    {"pd_op.nearest_interp", "nearest_interp_v2", "X, OutSize, SizeTensor[], Scale -> Out",
     "data_format>data_layout scale:floats"},
    {"pd_op.bilinear_interp", "bilinear_interp_v2", "X, OutSize, SizeTensor[], Scale -> Out",
     "data_format>data_layout scale:floats"},
    {"pd_op.rnn", "rnn", "Input, PreState[], WeightList[], SequenceLength, - -> Out, DropoutState, State[], Reserve"},

    // ---- tensor manipulation -----------------------------------------------------------------
    {"pd_op.reshape", "reshape2", "X, @shape:ints|Shape|ShapeTensor[] -> Out, XShape"},
    {"pd_op.transpose", "transpose2", "X -> Out, XShape", "perm>axis:ints"},
    {"pd_op.flatten", "flatten_contiguous_range", "X -> Out, XShape"},
    {"pd_op.squeeze", "squeeze2", "X, @axes:ints -> Out, XShape"},
    {"pd_op.unsqueeze", "unsqueeze2", "X, @axes:ints|AxesTensor|AxesTensorList[] -> Out, XShape"},
    {"pd_op.concat", "concat", "X[], @axis:int|AxisTensor -> Out"},
    {"pd_op.split_with_num", "split", "X, @axis:int|AxisTensor -> Out[]"},
    {"pd_op.split", "split", "X, @sections:ints|SectionsTensorList[], @axis:int|AxisTensor -> Out[]"},
    {"pd_op.stack", "stack", "X[] -> Y"},
    {"pd_op.slice", "slice",
     "Input, @starts:ints|StartsTensor|StartsTensorList[], @ends:ints|EndsTensor|EndsTensorList[] -> Out",
     "axes:ints infer_flags:ints decrease_axis:ints"},
    {"pd_op.gather", "gather", "X, Index, @axis:int|Axis -> Out"},
    {"pd_op.expand", "expand_v2", "X, @shape:ints|Shape|expand_shapes_tensor[] -> Out"},
    {"pd_op.tile", "tile", "X, @repeat_times:ints|RepeatTimes|repeat_times_tensor[] -> Out"},
    {"pd_op.where", "where", "Condition, X, Y -> Out"},
    {"pd_op.equal", "equal", "X, Y -> Out"},
    {"pd_op.not_equal", "not_equal", "X, Y -> Out"},
    {"pd_op.less_than", "less_than", "X, Y -> Out"},
    {"pd_op.less_equal", "less_equal", "X, Y -> Out"},
    {"pd_op.greater_than", "greater_than", "X, Y -> Out"},
    {"pd_op.greater_equal", "greater_equal", "X, Y -> Out"},
    {"pd_op.shape", "shape", "Input -> Out"},
    {"pd_op.cast", "cast", "X -> Out", "dtype>out_dtype:vartype in_dtype=$dtype(0)"},
    {"pd_op.assign", "assign", "X -> Out"},
    {"pd_op.topk", "top_k_v2", "X, @k:int|K -> Out, Indices"},
    {"pd_op.accuracy", "accuracy", "Out, Indices, Label -> Accuracy, Correct, Total"},
    {"pd_op.full_with_tensor", "fill_constant",
     "@value:float|ValueTensor, @shape:longs|ShapeTensor|ShapeTensorList[] -> Out", "dtype:vartype"},
    {"pd_op.uniform", "uniform_random", "@shape:longs|ShapeTensor|ShapeTensorList[], @min:float, @max:float -> Out",
     "dtype:vartype"},
    {"pd_op.gaussian", "gaussian_random", "@shape:longs|ShapeTensor|ShapeTensorList[] -> Out",
     "dtype:vartype mean:float std:float"},

    // ---- losses --------------------------------------------------------------------------------
    {"pd_op.cross_entropy_with_softmax", "softmax_with_cross_entropy", "Logits, Label -> Softmax, Loss"},

    // ---- gradients (PIR's autodiff writes them by their forward op's name) ------------------------
    {"pd_op.matmul_grad", "matmul_v2_grad", "X, Y, Out@GRAD -> X@GRAD, Y@GRAD",
     "transpose_x>trans_x transpose_y>trans_y"},
    {"pd_op.add_grad", "elementwise_add_grad", "X, Y, Out@GRAD -> X@GRAD, Y@GRAD"},
    {"pd_op.subtract_grad", "elementwise_sub_grad", "X, Y, Out@GRAD -> X@GRAD, Y@GRAD"},
    {"pd_op.multiply_grad", "elementwise_mul_grad", "X, Y, Out@GRAD -> X@GRAD, Y@GRAD"},
    {"pd_op.relu_grad", "relu_grad", "Out, Out@GRAD -> X@GRAD"},
    {"pd_op.sigmoid_grad", "sigmoid_grad", "Out, Out@GRAD -> X@GRAD"},
    {"pd_op.tanh_grad", "tanh_grad", "Out, Out@GRAD -> X@GRAD"},
    {"pd_op.mean_grad", "reduce_mean_grad", "X, Out@GRAD, @dim:ints -> X@GRAD", "keepdim>keep_dim"},
    {"pd_op.sum_grad", "reduce_sum_grad", "X, Out@GRAD, @dim:ints -> X@GRAD", "keepdim>keep_dim"},
    {"pd_op.mean_all_grad", "mean_grad", "X, Out@GRAD -> X@GRAD"},
    {"pd_op.conv2d_grad", "conv2d_grad", "Input, Filter, Output@GRAD -> Input@GRAD, Filter@GRAD"},
    {"pd_op.pool2d_grad", "pool2d_grad", "X, Out, Out@GRAD, @ksize:ints -> X@GRAD", "strides:ints paddings:ints"},
    {"pd_op.batch_norm_grad", "batch_norm_grad",
     "X, Scale, Bias, MeanOut, VarianceOut, SavedMean, SavedVariance, ReserveSpace, Y@GRAD -> X@GRAD, Scale@GRAD, "
     "Bias@GRAD",
     "data_format>data_layout"},
    {"pd_op.reshape_grad", "reshape2_grad", "X, Out@GRAD -> X@GRAD"},
    {"pd_op.flatten_grad", "flatten_contiguous_range_grad", "X, Out@GRAD -> X@GRAD"},
    {"pd_op.cross_entropy_with_softmax_grad", "softmax_with_cross_entropy_grad",
     "Label, Softmax, Loss@GRAD -> Logits@GRAD"},

    // ---- optimizers (in place: PIR's trailing underscore) -----------------------------------------
    {"pd_op.sgd_", "sgd", "Param, LearningRate, Grad, MasterParam -> ParamOut=Param, MasterParamOut=MasterParam"},
    {"pd_op.momentum_", "momentum",
     "Param, Grad, Velocity, LearningRate, MasterParam -> ParamOut=Param, VelocityOut=Velocity, "
     "MasterParamOut=MasterParam"},
    {"pd_op.adam_", "adam",
     "Param, Grad, LearningRate, Moment1, Moment2, Moment2Max, Beta1Pow, Beta2Pow, MasterParam, SkipUpdate, "
     "@beta1:float|Beta1Tensor, @beta2:float|Beta2Tensor, @epsilon:float|EpsilonTensor -> ParamOut=Param, "
     "Moment1Out=Moment1, Moment2Out=Moment2, Moment2MaxOut=Moment2Max, Beta1PowOut=Beta1Pow, Beta2PowOut=Beta2Pow, "
     "MasterParamOut=MasterParam"},
};

// Legacy ops PaddlePaddle has that no PIR program of the table becomes: those of Paddle's legacy
// programs (static-graph layers, backward, initializers, control flow). With the table's legacy
// names (and their `_grad` ops) they are the ops a .pdmodel for Paddle may hold (IsPaddleOp).
constexpr std::string_view kLegacyOnlyOps =
    "feed fetch fetch_v2 fill_constant assign_value fill_any_like fill_zeros_like mul matmul cross_entropy "
    "cross_entropy2 squared_l2_norm lookup_table top_k uniform_random gaussian_random truncated_gaussian_random "
    "conditional_block while select_input select_output increment elementwise_mod elementwise_floordiv grad_add "
    "softmax_with_cross_entropy fc fused_elemwise_activation save_combine load_combine "
    "c_allreduce_sum c_allreduce_max c_allreduce_min c_allreduce_prod c_broadcast c_allgather c_identity "
    "c_sync_calc_stream c_sync_comm_stream coalesce_tensor all_reduce broadcast sync_batch_norm "
    "sequence_pool sequence_softmax sequence_expand sequence_pad sequence_unpad sequence_reverse sequence_mask";

constexpr std::pair<std::string_view, AttrForm> kForms[] = {
    {"bool", AttrForm::kBool},       {"int", AttrForm::kInt},       {"long", AttrForm::kLong},
    {"float", AttrForm::kFloat},     {"double", AttrForm::kDouble}, {"str", AttrForm::kStr},
    {"ints", AttrForm::kInts},       {"longs", AttrForm::kLongs},   {"floats", AttrForm::kFloats},
    {"doubles", AttrForm::kDoubles}, {"strs", AttrForm::kStrs},     {"vartype", AttrForm::kVarType}};

std::string_view Trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  while (true) {
    size_t p = s.find(sep);
    std::string_view part = Trim(s.substr(0, p));
    if (!part.empty()) out.push_back(part);
    if (p == std::string_view::npos) return out;
    s.remove_prefix(p + 1);
  }
}

bool ValidName(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '@';
  });
}

class RowParser {
 public:
  explicit RowParser(const TableRow& row) : row_(row) {}

  StatusOr<OpRule> Parse() {
    OpRule r;
    r.pir = std::string(row_.pir);
    r.legacy = std::string(row_.legacy);
    size_t arrow = row_.signature.find("->");
    if (arrow == std::string_view::npos) return Bad("the signature has no '->'");
    for (std::string_view t : Split(row_.signature.substr(0, arrow), ',')) {
      PC_ASSIGN_OR_RETURN(OperandRule o, Operand(t));
      r.operands.push_back(std::move(o));
    }
    for (std::string_view t : Split(row_.signature.substr(arrow + 2), ',')) {
      PC_ASSIGN_OR_RETURN(ResultRule res, Result(t));
      r.results.push_back(std::move(res));
    }
    for (std::string_view t : Split(row_.attrs, ' ')) PC_RETURN_IF_ERROR(AttrToken(t, &r));
    return r;
  }

 private:
  Error Bad(std::string what) const {
    return MakeError(ErrorCode::kInternal, "PIR translation table row {} ({}): {}", row_.pir, row_.legacy, what);
  }

  StatusOr<AttrForm> Form(std::string_view name) const {
    for (auto [n, f] : kForms)
      if (n == name) return f;
    return Bad(fmt::format("unknown attribute form '{}'", name));
  }

  StatusOr<OperandRule> Operand(std::string_view t) const {
    OperandRule o;
    if (t == "-") {
      o.ignore = true;
      return o;
    }
    std::vector<std::string_view> alts = Split(t, '|');
    for (size_t i = 0; i < alts.size(); ++i) {
      std::string_view a = alts[i];
      if (a.starts_with('@')) {
        if (i != 0) return Bad(fmt::format("'{}': the attribute must come first", t));
        size_t colon = a.find(':');
        if (colon == std::string_view::npos) return Bad(fmt::format("'{}' has no :form", a));
        o.attr = std::string(a.substr(1, colon - 1));
        PC_ASSIGN_OR_RETURN(o.form, Form(a.substr(colon + 1)));
        if (!ValidName(o.attr)) return Bad(fmt::format("bad attribute name in '{}'", a));
      } else if (a.ends_with("[]")) {
        std::string_view name = a.substr(0, a.size() - 2);
        if (!ValidName(name)) return Bad(fmt::format("bad slot name '{}'", a));
        if (o.slot.empty() && o.attr.empty()) {
          o.slot = std::string(name);
          o.slot_is_list = true;
        } else {
          o.list_slot = std::string(name);
        }
      } else {
        if (!ValidName(a)) return Bad(fmt::format("bad slot name '{}'", a));
        if (!o.slot.empty()) return Bad(fmt::format("'{}' names two tensor slots", t));
        o.slot = std::string(a);
      }
    }
    return o;
  }

  StatusOr<ResultRule> Result(std::string_view t) const {
    ResultRule r;
    if (t == "-") {
      r.drop = true;
      return r;
    }
    size_t eq = t.find('=');
    if (eq != std::string_view::npos) {
      r.inplace_of = std::string(t.substr(eq + 1));
      t = t.substr(0, eq);
      if (!ValidName(r.inplace_of)) return Bad(fmt::format("bad in-place slot '{}'", r.inplace_of));
    }
    if (t.ends_with("[]")) {
      r.list = true;
      t.remove_suffix(2);
    }
    if (!ValidName(t)) return Bad(fmt::format("bad result slot '{}'", t));
    r.slot = std::string(t);
    return r;
  }

  Status AttrToken(std::string_view t, OpRule* r) const {
    size_t eq = t.find('=');
    if (eq != std::string_view::npos) {
      FixedAttr f;
      f.legacy = std::string(t.substr(0, eq));
      std::string_view v = t.substr(eq + 1);
      if (v.starts_with("$dtype(") && v.ends_with(")")) {
        f.source = FixedAttr::Source::kOperandDType;
        f.operand = std::atoi(std::string(v.substr(7)).c_str());
        f.form = AttrForm::kVarType;
      } else {
        size_t colon = v.rfind(':');
        if (colon == std::string_view::npos) return Bad(fmt::format("'{}' has no :form", t));
        f.literal = std::string(v.substr(0, colon));
        PC_ASSIGN_OR_RETURN(f.form, Form(v.substr(colon + 1)));
      }
      r->fixed.push_back(std::move(f));
      return Status::OK();
    }
    AttrRule a;
    std::string_view name = t;
    size_t colon = t.find(':');
    if (colon != std::string_view::npos) {
      PC_ASSIGN_OR_RETURN(a.form, Form(t.substr(colon + 1)));
      name = t.substr(0, colon);
    }
    size_t gt = name.find('>');
    a.pir = std::string(name.substr(0, gt));
    a.legacy = gt == std::string_view::npos ? a.pir : std::string(name.substr(gt + 1));
    if (a.legacy == "-") a.legacy.clear();
    if (!ValidName(a.pir)) return Bad(fmt::format("bad attribute rule '{}'", t));
    r->attrs.push_back(std::move(a));
    return Status::OK();
  }

  const TableRow& row_;
};

}  // namespace

std::span<const TableRow> OpTable() { return kRows; }
std::string_view LegacyOnlyOps() { return kLegacyOnlyOps; }

const AttrRule* OpRule::FindAttrRule(std::string_view pir_attr) const {
  for (const auto& a : attrs)
    if (a.pir == pir_attr) return &a;
  return nullptr;
}

StatusOr<OpRule> ParseRow(const TableRow& row) { return RowParser(row).Parse(); }

std::string_view AttrFormName(AttrForm f) {
  for (auto [n, form] : kForms)
    if (form == f) return n;
  return "natural";
}

}  // namespace paddlec::ir::pir
