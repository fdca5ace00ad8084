#include "jit/shared_object.hpp"

#include <dlfcn.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gemmforge/error.hpp"

namespace gf::jit {

SharedObject::SharedObject(const std::string& bytes) {
  int fd = memfd_create("gemmforge-so", MFD_CLOEXEC);
  GF_CHECK(fd >= 0, "memfd_create failed");
  bool written = ::write(fd, bytes.data(), bytes.size()) == ssize_t(bytes.size());
  if (written) handle_ = dlopen(fmt::format("/proc/self/fd/{}", fd).c_str(), RTLD_NOW | RTLD_LOCAL);
  const char* why = handle_ ? nullptr : dlerror();
  ::close(fd);
  GF_CHECK(written, "could not stage a shared object in memory");
  GF_CHECK(handle_, "could not load a compiled kernel: {}", why ? why : "?");
}

SharedObject::~SharedObject() {
  if (handle_) dlclose(handle_);
}

void* SharedObject::symbol(const char* name) const {
  void* s = dlsym(handle_, name);
  GF_CHECK(s, "the compiled kernel lacks {}", name);
  return s;
}

}  // namespace gf::jit
