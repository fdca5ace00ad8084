#pragma once
// The source nvcc compiles for one unit: an explicit Instance of kernels/gemm/cutlass/unit.cuh per
// kernel, their names, and the C entry points (entry_points.cuh) over them. Everything else lives
// in kernels/gemm/cutlass/.
#include <string>

#include "backends/gemm/cutlass/space.hpp"

namespace gf::cutlass_backend {

std::string unit_source(const Unit& u);

}  // namespace gf::cutlass_backend
