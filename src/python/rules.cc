// Rules the core owns that the Python package applies before calling it: the feed rule (dtype
// conversion and shape check, the same as `paddlec run --feed`) and the op_role bits.
#include <pybind11/stl.h>

#include "bindings.h"
#include "paddlec/core/feed_rules.h"
#include "paddlec/ir/op_role.h"
#include "paddlec/runtime/tensor.h"

namespace paddlec::python {

void RegisterRules(py::module_& m) {
  m.def(
      "check_feed",
      [](const std::string& name, const std::string& declared_dtype, std::optional<std::vector<int64_t>> declared_dims,
         const std::string& dtype, const std::vector<int64_t>& shape) -> std::pair<py::object, py::object> {
        auto parse = [](const std::string& n) {
          if (n.empty()) return DType::kUndefined;
          auto t = ParseDType(n);
          if (!t) throw PaddlecException(MakeError(ErrorCode::kInvalidArgument, "unknown dtype '{}'", n));
          return *t;
        };
        DType declared = parse(declared_dtype);
        FeedCast cast = ValueOrThrow(CheckFeedDType(name, declared, std::string_view(dtype)));
        if (declared_dims && !declared_dims->empty()) {
          Dims want = ValueOrThrow(Dims::FromRange(declared_dims->begin(), declared_dims->end()));
          Dims got = ValueOrThrow(Dims::FromRange(shape.begin(), shape.end()));
          ThrowIfError(CheckFeedDims(name, want, got));
        }
        py::object to = cast.convert ? py::object(py::str(std::string(DTypeName(declared)))) : py::none();
        py::object warning = cast.warning.empty() ? py::none() : py::object(py::str(cast.warning));
        return {to, warning};
      },
      py::arg("name"), py::arg("declared_dtype"), py::arg("declared_dims"), py::arg("dtype"), py::arg("shape"),
      "Checks an array (dtype name, shape) fed to input `name` declared with `declared_dtype` and "
      "`declared_dims` (-1 for any size; None or [] for unchecked): the rule of `paddlec run --feed`. Returns "
      "(dtype to convert to or None, warning text or None); raises InvalidArgumentError otherwise.");

  m.def(
      "lod_problem",
      [](const std::vector<std::vector<uint64_t>>& lod, int64_t rows) { return runtime::LoDProblem(lod, rows); },
      py::arg("lod"), py::arg("rows"),
      "What is wrong with LoD offsets for a tensor of `rows` rows (runtime::LoDProblem); '' when nothing is.");

  py::dict roles;
  roles["forward"] = static_cast<int>(ir::kOpRoleForward);
  roles["backward"] = static_cast<int>(ir::kOpRoleBackward);
  roles["optimize"] = static_cast<int>(ir::kOpRoleOptimize);
  roles["rpc"] = static_cast<int>(ir::kOpRoleRPC);
  roles["dist"] = static_cast<int>(ir::kOpRoleDist);
  roles["lr_sched"] = static_cast<int>(ir::kOpRoleLRSched);
  roles["loss"] = static_cast<int>(ir::kOpRoleLoss);
  m.attr("OP_ROLE") = roles;
  m.attr("OP_ROLE_NOT_FORWARD") = static_cast<int>(ir::kOpRoleNotForward);
}

}  // namespace paddlec::python
