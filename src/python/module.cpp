#include <nanobind/nanobind.h>

#include "gemmforge/error.hpp"
#include "python/bindings.hpp"

NB_MODULE(_gemmforge, m) {
  m.doc() = "gemmforge's C++ library: problems, the tuner, the runtime (see the gemmforge package)";
  // gf::Error reaches Python as gemmforge.Error, with its one-line message.
  nanobind::exception<gf::Error>(m, "Error", PyExc_RuntimeError);
  m.attr("__version__") = GF_VERSION;
  gf::python::bind_problems(m);
  gf::python::bind_runtime(m);
  gf::python::bind_tuner(m);
}
