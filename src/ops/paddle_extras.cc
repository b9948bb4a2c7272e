// PaddlePaddle's extra attributes: backend hints its framework writes on the ops of a legacy
// program (Paddle 3.3's op_compat "extra" lists, as `paddle.base.core.get_op_extra_attrs` reports
// them). They steer oneDNN, cuDNN, quantization and distributed lookups, none of which paddlec's
// kernels consult, so each is declared (so that PaddlePaddle's files validate and the op reference
// shows them), flagged extra and documented as ignored.
//
// One table, applied after every family registered its ops; a row names ops and attributes as
// "name:form=default". An op's `<op>_grad` gets the same attributes, as PaddlePaddle's grad ops carry
// their forward op's. An attribute the op already declares (because paddlec reads it) is left alone,
// and rows for ops that are not registered are skipped.
#include <string_view>
#include <vector>

#include "paddlec/ops/op_registry.h"

namespace paddlec::ops {

std::vector<std::string> RegisterPaddleExtraAttrsChecked(OpRegistry& registry);
void RegisterPaddleExtraAttrs(OpRegistry& registry);
namespace {

struct ExtraRow {
  std::string_view ops;    // space-separated op types
  std::string_view attrs;  // space-separated "name:form=default"
};

constexpr std::string_view kQuantScales = "Scale_x:float=1 Scale_y:float=1 Scale_out:float=1";

constexpr ExtraRow kRows[] = {
    {"elementwise_add elementwise_sub elementwise_mul elementwise_div elementwise_max elementwise_min "
     "elementwise_pow elementwise_mod elementwise_floordiv",
     kQuantScales},
    {"conv2d depthwise_conv2d conv2d_transpose",
     "exhaustive_search:bool=false force_fp32_output:bool=false is_test:bool=false use_addto:bool=false "
     "workspace_size_MB:int=512"},
    {"depthwise_conv2d conv2d_transpose",
     "fuse_activation:str= fuse_alpha:float=0 fuse_beta:float=0 fuse_relu:bool=false"},
    {"depthwise_conv2d",
     "Scale_in:float=1 Scale_in_eltwise:float=1 Scale_out:float=1 Scale_weights:floats=1 "
     "fuse_relu_before_depthwise_conv:bool=false fuse_residual_connection:bool=false"},
    {"matmul_v2 mul", "force_fp32_output:bool=false"},
    {"mul", "scale_x:float=1 scale_y:floats=1 scale_out:float=1"},
    {"layer_norm pool2d softmax", "is_test:bool=false"},
    {"softmax transpose2", "data_format:str=AnyLayout"},
    {"batch_norm", "fuse_with_relu:bool=false"},
    {"dropout", "fix_seed:bool=false seed:int=0"},
    {"relu6", "threshold:float=6"},
    {"swish", "beta:float=1"},
    {"lookup_table_v2",
     "epmap:strs= height_sections:longs= is_distributed:bool=false is_sparse:bool=false remote_prefetch:bool=false "
     "slot:int=0 table_names:strs= trainer_id:int=0"},
};

std::vector<std::string_view> Words(std::string_view s) {
  std::vector<std::string_view> out;
  while (!s.empty()) {
    size_t p = s.find(' ');
    if (p != 0) out.push_back(s.substr(0, p));
    if (p == std::string_view::npos) break;
    s.remove_prefix(p + 1);
  }
  return out;
}

void Declare(OpBuilder& b, const OpInfo& info, std::string_view spec, std::vector<std::string>& problems) {
  size_t colon = spec.find(':'), eq = spec.find('=');
  if (colon == std::string_view::npos || eq == std::string_view::npos || eq < colon) {
    problems.push_back(fmt::format("paddle_extras: malformed attribute '{}'", spec));
    return;
  }
  std::string name(spec.substr(0, colon));
  std::string_view form = spec.substr(colon + 1, eq - colon - 1);
  std::string value(spec.substr(eq + 1));
  if (info.FindAttr(name) != nullptr) return;
  const std::string doc = "PaddlePaddle backend attribute (oneDNN / cuDNN / quantization / distributed); ignored.";
  if (form == "bool")
    b.Attr(name, value == "true", doc);
  else if (form == "int")
    b.Attr(name, std::stoi(value), doc);
  else if (form == "float")
    b.Attr(name, std::stof(value), doc);
  else if (form == "str")
    b.Attr(name, value, doc);
  else if (form == "floats")
    b.Attr(name, value.empty() ? std::vector<float>{} : std::vector<float>{std::stof(value)}, doc);
  else if (form == "longs")
    b.Attr(name, std::vector<int64_t>{}, doc);
  else if (form == "strs")
    b.Attr(name, std::vector<std::string>{}, doc);
  else {
    problems.push_back(fmt::format("paddle_extras: unknown form in '{}'", spec));
    return;
  }
  b.ExtraAttr();
}

}  // namespace

/// Declares the table's attributes on `registry`'s ops; returns the table's malformed entries (none
/// in a correct table: registry_test checks).
std::vector<std::string> RegisterPaddleExtraAttrsChecked(OpRegistry& registry) {
  std::vector<std::string> problems;
  for (const ExtraRow& row : kRows) {
    for (std::string_view op : Words(row.ops)) {
      for (std::string type : {std::string(op), std::string(op) + "_grad"}) {
        OpInfo* info = registry.MutableFind(type);
        if (info == nullptr) continue;
        OpBuilder builder(info, &registry, &problems);
        for (std::string_view spec : Words(row.attrs)) Declare(builder, *info, spec, problems);
      }
    }
  }
  return problems;
}

void RegisterPaddleExtraAttrs(OpRegistry& registry) { (void)RegisterPaddleExtraAttrsChecked(registry); }

}  // namespace paddlec::ops
