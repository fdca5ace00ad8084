#pragma once
// Integer arithmetic the search spaces and the launches share.
#include <cstdint>

namespace gf {

// Tiles (or blocks, waves) of b needed to cover a; a >= 0, b > 0.
constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace gf
