#include "jit/shared_object.hpp"

#include <dlfcn.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gemmforge/error.hpp"

namespace gf::jit {
namespace {

std::string path_of(int fd) { return fmt::format("/proc/self/fd/{}", fd); }

}  // namespace

// The loader knows an object by the path it was opened through and hands an already loaded object
// back for the same path, whatever the file behind it now holds. A memfd's path names its
// descriptor, so the descriptor stays open while the object is loaded: no other object gets the
// same path meanwhile (closed after dlopen, the next kernel's memfd took the same number and got
// the first kernel back).
SharedObject::SharedObject(const std::string& bytes) {
  fd_ = memfd_create("gemmforge-so", MFD_CLOEXEC);
  GF_CHECK(fd_ >= 0, "memfd_create failed");
  const std::string path = path_of(fd_);
  const bool written = ::write(fd_, bytes.data(), bytes.size()) == ssize_t(bytes.size());
  void* taken = written ? dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD) : nullptr;  // loaded by someone else
  if (written && !taken) handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  const char* why = handle_ ? nullptr : dlerror();
  if (!handle_) {
    if (taken) dlclose(taken);
    ::close(fd_);
  }
  GF_CHECK(written, "could not stage a shared object in memory");
  GF_CHECK(!taken, "an object loaded through {} by other code is still loaded", path);
  GF_CHECK(handle_, "could not load a compiled kernel: {}", why ? why : "?");
}

SharedObject::~SharedObject() {
  dlclose(handle_);
  // An object the loader keeps (one marked not to be unloaded) keeps its path: its descriptor
  // stays open, for good.
  if (void* kept = dlopen(path_of(fd_).c_str(), RTLD_NOW | RTLD_NOLOAD)) {
    dlclose(kept);
    return;
  }
  ::close(fd_);
}

void* SharedObject::symbol(const char* name) const {
  void* s = dlsym(handle_, name);
  GF_CHECK(s, "the compiled kernel lacks {}", name);
  return s;
}

}  // namespace gf::jit
