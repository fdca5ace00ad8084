#include "gemmforge/error.hpp"

namespace gf {

std::string Error::where() const { return fmt::format("{} ({}:{})", what(), file_, line_); }

}  // namespace gf
