// Compile passes and program files for Python: a main and a startup ProgramDesc plus the compile
// metadata (CompileState) together form the ir::Module the C++ pass manager transforms.
#include <pybind11/stl.h>

#include <algorithm>
#include <map>

#include "bindings.h"
#include "paddlec.pb.h"
#include "paddlec/ir/serialize.h"
#include "paddlec/ops/op_registry.h"
#include "paddlec/passes/pass_manager.h"
#include "paddlec/passes/signature.h"

namespace paddlec::python {
namespace {

/// A CompiledProgram without its two programs: the loss, the parameters' gradients, the passes
/// applied and the interface (feeds, fetches, parameters) of a Python program.
struct CompileState {
  paddlec::proto::CompiledProgram meta;

  void Absorb(paddlec::proto::CompiledProgram c) {
    c.clear_main_program();
    c.clear_startup_program();
    meta = std::move(c);
  }
  paddlec::proto::CompiledProgram With(const ProgramState& main, const ProgramState* startup) const {
    paddlec::proto::CompiledProgram c = meta;
    *c.mutable_main_program() = main.desc();
    if (startup != nullptr) *c.mutable_startup_program() = startup->desc();
    return c;
  }
};

std::unique_ptr<ir::Module> MakeModule(paddlec::proto::CompiledProgram c) {
  return ValueOrThrow(ir::Module::Create(std::move(c)));
}

/// Recomputes feeds, fetches and parameters from the main program (ComputeSignature keeps recorded
/// ones, and a Python program may have changed since they were recorded).
void Resign(ir::Module& m) {
  m.compiled().clear_feed_targets();
  m.compiled().clear_fetch_targets();
  m.compiled().clear_parameters();
  passes::ComputeSignature(m);
}

void WriteBack(ProgramState& target, const pb::ProgramDesc& result) {
  if (result.SerializeAsString() != target.desc().SerializeAsString()) target.Replace(result);
}

std::optional<ir::Format> OptionalFormat(const std::string& f) {
  if (f.empty()) return std::nullopt;
  return ValueOrThrow(ir::ParseFormat(f));
}

ir::Format OutputFormat(const std::string& path, const std::string& format) {
  if (!format.empty()) return ValueOrThrow(ir::ParseFormat(format));
  return ir::FormatFromPath(path).value_or(ir::Format::kBinary);
}

/// A typed option value as the pass's option text: the pass manager parses it back by the option's
/// declared type, so no pipeline grammar is involved.
std::string OptionText(const std::string& pass, const passes::PassOption& spec, py::handle v) {
  auto wrong = [&](const char* want) {
    return PaddlecException(MakeError(ErrorCode::kInvalidArgument, "option '{}' of pass '{}' takes {}, got {}",
                                      spec.name, pass, want, py::repr(v).cast<std::string>()));
  };
  bool is_bool = PyBool_Check(v.ptr()), is_int = !is_bool && PyLong_Check(v.ptr());
  switch (spec.type) {
    case passes::PassOption::Type::kBool:
      if (!is_bool) throw wrong("a bool");
      return v.ptr() == Py_True ? "true" : "false";
    case passes::PassOption::Type::kInt:
      if (!is_int) throw wrong("an int");
      return py::str(v).cast<std::string>();
    case passes::PassOption::Type::kFloat:
      if (!is_int && !PyFloat_Check(v.ptr())) throw wrong("a float");
      return fmt::format("{}", v.cast<double>());
    case passes::PassOption::Type::kString:
      if (!PyUnicode_Check(v.ptr())) throw wrong("a str");
      return v.cast<std::string>();
    case passes::PassOption::Type::kStringList: {
      if (PyUnicode_Check(v.ptr()) || !py::isinstance<py::iterable>(v)) throw wrong("a list of str");
      std::string out;
      for (py::handle item : v) {
        if (!PyUnicode_Check(item.ptr())) throw wrong("a list of str");
        std::string s = item.cast<std::string>();
        if (s.find(passes::PassOption::kListSeparator) != std::string::npos)
          throw PaddlecException(MakeError(ErrorCode::kInvalidArgument,
                                           "option '{}' of pass '{}': '{}' cannot be listed (it contains '{}')",
                                           spec.name, pass, s, passes::PassOption::kListSeparator));
        out += (out.empty() ? "" : std::string(1, passes::PassOption::kListSeparator)) + s;
      }
      return out;
    }
  }
  return "";
}

/// Appends a pipeline given as text, or as [(pass, {option: typed value})].
void AddSteps(passes::PassManager& pm, py::handle pipeline) {
  if (PyUnicode_Check(pipeline.ptr())) {
    ThrowIfError(pm.AddPipeline(pipeline.cast<std::string>()));
    return;
  }
  for (py::handle step : pipeline) {
    auto [name, options] = step.cast<std::pair<std::string, py::dict>>();
    auto pass = ValueOrThrow(passes::CreatePass(name));
    std::vector<passes::PassOption> specs = pass->Options();
    std::map<std::string, std::string> text;
    for (auto [k, v] : options) {
      std::string key = k.cast<std::string>();
      auto spec = std::find_if(specs.begin(), specs.end(), [&](const auto& s) { return s.name == key; });
      // An unknown option goes through as text, for the pass manager's own error.
      text[key] = spec == specs.end() ? py::str(v).cast<std::string>() : OptionText(name, *spec, v);
    }
    ThrowIfError(pm.AddPass(name, text));
  }
}

}  // namespace

void RegisterPasses(py::module_& m) {
  py::class_<CompileState>(m, "CompileState",
                           "Compile metadata of a program: loss, parameter gradients, passes applied, "
                           "feed and fetch targets, parameters (paddlec.proto's CompiledProgram without "
                           "its programs).")
      .def(py::init<>())
      .def("copy", [](const CompileState& s) { return CompileState(s); })
      .def_property(
          "loss", [](const CompileState& s) { return s.meta.loss(); },
          [](CompileState& s, const std::string& v) { s.meta.set_loss(v); })
      .def_property_readonly("param_grads",
                             [](const CompileState& s) {
                               std::vector<std::pair<std::string, std::string>> out;
                               for (const auto& pg : s.meta.param_grads()) out.emplace_back(pg.param(), pg.grad());
                               return out;
                             })
      .def_property_readonly("passes_applied",
                             [](const CompileState& s) {
                               return std::vector<std::string>(s.meta.passes_applied().begin(),
                                                               s.meta.passes_applied().end());
                             })
      .def_property_readonly("feed_targets",
                             [](const CompileState& s) {
                               std::vector<std::tuple<std::string, std::string, std::vector<int64_t>>> out;
                               for (const auto& f : s.meta.feed_targets()) {
                                 auto dt = DTypeFromProto(f.data_type());
                                 out.emplace_back(f.name(), dt.ok() ? std::string(DTypeName(*dt)) : "",
                                                  std::vector<int64_t>(f.dims().begin(), f.dims().end()));
                               }
                               return out;
                             })
      .def_property_readonly("fetch_targets",
                             [](const CompileState& s) {
                               return std::vector<std::string>(s.meta.fetch_targets().begin(),
                                                               s.meta.fetch_targets().end());
                             })
      .def_property_readonly("parameters", [](const CompileState& s) {
        return std::vector<std::string>(s.meta.parameters().begin(), s.meta.parameters().end());
      });

  m.def(
      "run_passes",
      [](ProgramState& main, ProgramState& startup, py::handle pipeline, CompileState& state) {
        if (&main == &startup)
          throw PaddlecException(
              MakeError(ErrorCode::kInvalidArgument, "the main and the startup program must be different programs"));
        auto module = MakeModule(state.With(main, &startup));
        passes::PassManager pm;
        AddSteps(pm, pipeline);
        passes::PassContext ctx{ops::GlobalOpRegistry()};
        // The inputs are copies: a failing pipeline leaves both programs and the state as they were.
        ThrowIfError(pm.Run(*module, ctx));
        WriteBack(main, module->compiled().main_program());
        WriteBack(startup, module->compiled().startup_program());
        state.Absorb(std::move(module->compiled()));
        std::vector<std::tuple<std::string, double, bool>> timings;
        for (const auto& t : pm.timings()) timings.emplace_back(t.name, t.ms, t.changed);
        return timings;
      },
      py::arg("main"), py::arg("startup"), py::arg("pipeline"), py::arg("state"),
      "Runs a pass pipeline over the module formed by main, startup and state, and writes the results "
      "back into them. The pipeline is a list of (pass, {option: value}) with typed values (bool, int, "
      "float, str, or a list of str for list options), or pipeline text as `paddlec compile --passes` "
      "takes it. Returns (pass, milliseconds, changed) per pass.");

  m.def(
      "compute_signature",
      [](const ProgramState& main, CompileState& state) {
        auto module = MakeModule(state.With(main, nullptr));
        Resign(*module);
        state.Absorb(std::move(module->compiled()));
      },
      py::arg("main"), py::arg("state"),
      "Fills state's feed targets, fetch targets and parameters from the main program.");

  m.def(
      "clone_for_test",
      [](const ProgramState& main) { return std::make_shared<ProgramState>(ir::CloneForTest(main.desc())); },
      py::arg("main"), "The forward part of a program (ops before the first backward/optimizer op) with is_test set.");

  m.def(
      "list_passes",
      [] {
        std::vector<std::tuple<std::string, std::string,
                               std::vector<std::tuple<std::string, std::string, std::string, std::string>>>>
            out;
        for (const auto& p : passes::ListPasses()) {
          std::vector<std::tuple<std::string, std::string, std::string, std::string>> opts;
          for (const auto& o : p.options)
            opts.emplace_back(o.name, std::string(passes::PassOptionTypeName(o.type)), o.default_value, o.help);
          out.emplace_back(p.name, p.summary, std::move(opts));
        }
        return out;
      },
      "Every pass as (name, summary, [(option, type, default, help)]).");

  m.def(
      "format_from_path",
      [](const std::string& path) -> std::optional<std::string> {
        auto f = ir::FormatFromPath(path);
        if (!f) return std::nullopt;
        return std::string(ir::FormatName(*f));
      },
      py::arg("path"), "The format a file name implies ('text', 'binary', 'json'), or None.");
  m.def("is_bare_program_path", &ir::IsBareProgramPath, py::arg("path"),
        "True for files that hold a bare ProgramDesc (.pdmodel, __model__), never a CompiledProgram.");

  m.def(
      "save_program",
      [](const ProgramState& main, const std::string& path, const std::string& format) {
        ThrowIfError(ir::SaveProgramDesc(main.desc(), path, OutputFormat(path, format)));
      },
      py::arg("main"), py::arg("path"), py::arg("format") = "",
      "Writes the bare ProgramDesc (format from the extension unless given), atomically.");

  m.def(
      "save_compiled",
      [](const ProgramState& main, const ProgramState& startup, CompileState& state, const std::string& path,
         const std::string& format) {
        auto module = MakeModule(state.With(main, &startup));
        Resign(*module);
        ThrowIfError(ir::SaveModule(*module, path, OutputFormat(path, format)));
        state.Absorb(std::move(module->compiled()));
      },
      py::arg("main"), py::arg("startup"), py::arg("state"), py::arg("path"), py::arg("format") = "",
      "Writes main, startup and state as a CompiledProgram (what `paddlec compile` writes), atomically.");

  m.def(
      "load_module",
      [](const std::string& path, const std::string& format) {
        auto module = ValueOrThrow(ir::LoadModule(path, OptionalFormat(format)));
        auto main = std::make_shared<ProgramState>(module->compiled().main_program());
        auto startup = std::make_shared<ProgramState>(module->compiled().startup_program());
        CompileState state;
        bool compiled = module->was_compiled();
        state.Absorb(std::move(module->compiled()));
        return std::make_tuple(main, startup, std::move(state), compiled);
      },
      py::arg("path"), py::arg("format") = "",
      "Reads a program file: a bare ProgramDesc or a CompiledProgram, in any format. Returns (main, "
      "startup, state, was_compiled).");
}

}  // namespace paddlec::python
