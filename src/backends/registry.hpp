#pragma once
// Each backend folder exposes one factory; registry.cpp lists them.
#include <memory>

#include "gemmforge/backend.hpp"

namespace gf {
namespace cublaslt {
std::shared_ptr<Backend> make_backend();
}
namespace native {
std::shared_ptr<Backend> make_backend();
}
namespace triton_backend {
std::shared_ptr<Backend> make_backend();
}
namespace unfused {
std::shared_ptr<Backend> make_backend();
}
namespace faulty {
std::shared_ptr<Backend> make_backend();
}
}  // namespace gf
