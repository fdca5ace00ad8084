#pragma once
// The Python module _gemmforge: the C++ API as it is, one file per part. Python's gemmforge
// package wraps it; no logic lives there that belongs in C++.
#include <nanobind/nanobind.h>

namespace gf::python {

// The GIL let go for a call's C++ part: the library may compile, measure or wait on the GPU.
using Release = nanobind::call_guard<nanobind::gil_scoped_release>;

void bind_problems(nanobind::module_& m);  // GemmProblem, RowOpSpec, models
void bind_runtime(nanobind::module_& m);   // Runtime, OpsRuntime, the elementwise ops
void bind_tuner(nanobind::module_& m);     // Tuner, the tuning DB, the device

}  // namespace gf::python
