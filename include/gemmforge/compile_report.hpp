#pragma once
// What compiling one candidate ahead of its launch reported.
#include <string>

namespace gf {

struct CompileReport {
  bool ok = true;
  bool cached = false;
  double seconds = 0;
  int registers = -1;
  int spill_bytes = -1;
  std::string log;
};

}  // namespace gf
