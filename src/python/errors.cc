// paddlec errors as Python exceptions: one class per error code, each also a builtin exception
// (ValidationError is a ValueError, ...), carrying paddlec's rendered diagnostic and its parts.
#include <pybind11/stl.h>

#include <array>

#include "bindings.h"

namespace paddlec::python {
namespace {

struct ExceptionClass {
  const char* name;
  PyObject* builtin;  // the builtin base, besides paddlec's Error
  const char* doc;
};

// Indexed by ErrorCode; the classes live as long as the interpreter (never released, so no
// destructor runs after Python has shut down).
constexpr int kNumCodes = static_cast<int>(ErrorCode::kInternal) + 1;
std::array<PyObject*, kNumCodes> g_classes{};
PyObject* g_attr_type_error = nullptr;
PyObject* g_base = nullptr;

std::array<ExceptionClass, kNumCodes> Classes() {
  return {{
      {"InvalidArgumentError", PyExc_ValueError, "A bad option or value supplied by the caller."},
      {"ParseError", PyExc_ValueError, "Program text or bytes that do not parse."},
      {"ValidationError", PyExc_ValueError, "An op or variable that does not satisfy the op protos."},
      {"ShapeError", PyExc_ValueError, "Shape or dtype inference failed (the message names both shapes)."},
      {"NotFoundError", PyExc_LookupError, "A file, variable, op or kernel that does not exist."},
      {"FileError", PyExc_OSError, "Reading or writing a file failed."},
      {"UnimplementedError", PyExc_NotImplementedError, "A valid request this build does not support."},
      {"UnavailableError", PyExc_RuntimeError, "A device or library that is not present."},
      {"ResourceExhaustedError", PyExc_MemoryError, "An allocation or size limit was exceeded."},
      {"ExecutionError", PyExc_RuntimeError, "A kernel failed on the data it was given."},
      {"InternalError", PyExc_RuntimeError, "A paddlec bug."},
  }};
}

PyObject* NewClass(py::module_& m, const char* name, PyObject* builtin, const char* doc) {
  std::string qualified = std::string("paddlec._core.") + name;
  py::tuple bases =
      builtin ? py::make_tuple(py::handle(g_base), py::handle(builtin)) : py::make_tuple(py::handle(PyExc_Exception));
  PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases.ptr(), nullptr);
  if (cls == nullptr) throw py::error_already_set();
  m.add_object(name, py::handle(cls));  // add_object steals a reference: keep ours
  Py_INCREF(cls);
  return cls;
}

/// The diagnostic as the CLI prints it, without the leading "error: " of the first line.
std::string Diagnostic(const Error& e) {
  std::string text = e.Render(Frontend::kPython);
  if (text.rfind("error: ", 0) == 0) text.erase(0, 7);
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

void Raise(PyObject* cls, const Error& e) {
  std::string text = Diagnostic(e);
  py::object exc = py::reinterpret_steal<py::object>(PyObject_CallFunction(cls, "s", text.c_str()));
  if (!exc) return;  // the constructor raised; that exception stays set
  const SourceLocation& loc = e.location();
  exc.attr("code") = std::string(ErrorCodeName(e.code()));
  exc.attr("message") = e.message();
  exc.attr("diagnostic") = text;
  exc.attr("notes") = e.NotesFor(Frontend::kPython);
  exc.attr("op_type") = loc.op_type.empty() ? py::none() : py::object(py::str(loc.op_type));
  exc.attr("block") = loc.block >= 0 ? py::object(py::int_(loc.block)) : py::none();
  exc.attr("op_index") = loc.op >= 0 ? py::object(py::int_(loc.op)) : py::none();
  exc.attr("var") = loc.var.empty() ? py::none() : py::object(py::str(loc.var));
  exc.attr("file") = loc.file.empty() ? py::none() : py::object(py::str(loc.file));
  exc.attr("line") = loc.line > 0 ? py::object(py::int_(loc.line)) : py::none();
  PyErr_SetObject(cls, exc.ptr());
}

}  // namespace

void RegisterErrors(py::module_& m) {
  g_base = NewClass(m, "Error", nullptr, "Base class of every error paddlec reports.");
  auto classes = Classes();
  for (int i = 0; i < kNumCodes; ++i) g_classes[i] = NewClass(m, classes[i].name, classes[i].builtin, classes[i].doc);
  g_attr_type_error =
      NewClass(m, "AttributeTypeError", PyExc_TypeError, "An op attribute given a value of the wrong type.");

  py::register_exception_translator([](std::exception_ptr p) {
    if (!p) return;
    try {
      std::rethrow_exception(p);
    } catch (const PaddlecException& ex) {
      Raise(ex.attr_type_error ? g_attr_type_error : g_classes[static_cast<int>(ex.error.code())], ex.error);
    }
  });
}

}  // namespace paddlec::python
