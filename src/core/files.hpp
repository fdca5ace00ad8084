#pragma once
// Whole-file writes that readers, other processes and a run killed midway see as the old file or
// the new one, never a part.
#include <filesystem>
#include <string>

namespace gf {

// bytes into a temporary beside path (unique to this process and call), then renamed over path.
// Anything at path that is not a regular file (/dev/null, a pipe, a symlink, which the rename would
// replace) is written directly. Throws gf::Error, leaving no temporary, when it cannot.
void write_file_atomically(const std::filesystem::path& path, const std::string& bytes);

}  // namespace gf
