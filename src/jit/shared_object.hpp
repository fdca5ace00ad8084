#pragma once
// A shared object loaded from bytes in memory (the CuTe DSL kernels: launcher and cubin in one
// .so), through a memfd: no file to clean up or to race on. Each object runs its own code, however
// many are loaded at once.
#include <string>

namespace gf::jit {

class SharedObject {
 public:
  explicit SharedObject(const std::string& bytes);  // throws gf::Error with dlopen's reason
  ~SharedObject();
  SharedObject(const SharedObject&) = delete;
  SharedObject& operator=(const SharedObject&) = delete;
  // The symbol's address; throws gf::Error naming a missing one.
  void* symbol(const char* name) const;
  template <class Fn>
  Fn function(const char* name) const {
    return reinterpret_cast<Fn>(symbol(name));
  }

 private:
  int fd_ = -1;  // the memfd, open while the object is loaded (its path, /proc/self/fd/<fd_>, names it)
  void* handle_ = nullptr;
};

}  // namespace gf::jit
