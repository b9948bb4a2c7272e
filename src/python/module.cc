// The entry point of paddlec._core: registers each concern's bindings in dependency order.
#include "bindings.h"

PYBIND11_MODULE(_core, m) {
  m.doc() = "paddlec's C++ core: op registry, program descriptions, passes, executor and I/O.";
  m.attr("__version__") = PADDLEC_VERSION;
  paddlec::python::RegisterErrors(m);
  paddlec::python::RegisterOpProtos(m);
  paddlec::python::RegisterDesc(m);
  paddlec::python::RegisterPasses(m);
  paddlec::python::RegisterRuntime(m);
  paddlec::python::RegisterDatasets(m);
  paddlec::python::RegisterRules(m);
}
