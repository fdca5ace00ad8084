#pragma once
// The instantiation source NVRTC compiles for one row-op config: a Cfg struct of named constants
// and an extern "C" kernel running RowOp<Cfg> (kernels/rowops/).
#include <string>

#include "backends/rowop/native/space.hpp"

namespace gf::rowops {

std::string row_source(const RowConfig& c, const RowOpSpec& s);

}  // namespace gf::rowops
