#pragma once
// Record-then-tune: with GEMMFORGE_RECORD=FILE, every problem a runtime serves without a tuned
// decision is appended to FILE (its key, one a line), for `gemmforge tune --from FILE` later, on
// this machine or another. Each process records a key once; lines are appended whole, so several
// processes may share the file.
#include <string>

namespace gf::runtime {

void record_untuned(const std::string& key);

}  // namespace gf::runtime
