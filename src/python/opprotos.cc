// The op registry as Python sees it: the OpProtos (as the JSON `paddlec dump-opprotos` prints),
// the generated operator functions' source and the keyword names they use.
#include <pybind11/stl.h>

#include <sstream>

#include "bindings.h"
#include "paddlec/driver/driver.h"
#include "paddlec/ops/op_registry.h"

namespace paddlec::python {

void RegisterOpProtos(py::module_& m) {
  m.def(
      "op_protos_json",
      [] {
        std::ostringstream os;
        ThrowIfError(driver::RunDumpOpProtos({.format = "json"}, os));
        return os.str();
      },
      "Every registered OpProto with defaults, checks, kernels and gradient facts, as JSON (the text "
      "`paddlec dump-opprotos --format=json` prints).");
  m.def(
      "op_types",
      [] {
        std::vector<std::string> out;
        for (const ops::OpInfo* info : ops::GlobalOpRegistry().All()) out.push_back(info->type());
        return out;
      },
      "The registered op types, sorted.");
  m.def(
      "op_python_args",
      [](const std::string& type) {
        std::vector<std::tuple<std::string, std::string, std::string>> out;
        for (const auto& a : ValueOrThrow(driver::PythonArgs(type))) {
          const char* kind = a.kind == driver::PythonArg::Kind::kInput    ? "input"
                             : a.kind == driver::PythonArg::Kind::kOutput ? "output"
                                                                          : "attr";
          out.emplace_back(kind, a.proto_name, a.python_name);
        }
        return out;
      },
      py::arg("op_type"),
      "The keyword arguments of op_type's generated function as (kind, proto name, Python name), "
      "kind being 'input', 'output' or 'attr', in signature order.");
  m.def("op_function_name", &driver::PythonFunctionName, py::arg("op_type"),
        "The name of op_type's generated function.");
  m.def("generate_ops_source", &driver::GeneratePythonOps,
        "The source of paddlec.ops (what `paddlec gen-python` writes).");
}

}  // namespace paddlec::python
