// paddlec._spin: what libgomp must be told before it is loaded. The package imports it, and sets
// GOMP_SPINCOUNT from it, before _core, whose libraries load libgomp (runtime/threads.h). It holds
// runtime/spin_count.cc and nothing else of paddlec's.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "paddlec/runtime/spin_count.h"

PYBIND11_MODULE(_spin, m) {
  m.doc() = "The GOMP_SPINCOUNT that bounds libgomp's spin as paddlec's own (PADDLEC_SPIN_US).";
  m.def("bounded_spin_count", &paddlec::runtime::BoundedSpinCount,
        "GOMP_SPINCOUNT for about PADDLEC_SPIN_US microseconds (paddlec's default when unset) of this "
        "CPU's pause, or None when OMP_WAIT_POLICY or GOMP_SPINCOUNT is set");
}
