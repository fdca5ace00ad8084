#pragma once
// Each backend folder exposes one factory; registry.cpp lists them per family.
#include <memory>

#include "gemmforge/backend.hpp"

namespace gf {
namespace cublaslt {
std::shared_ptr<Backend> make_backend();
}
namespace cute_backend {
std::shared_ptr<Backend> make_backend();
}
namespace native {
std::shared_ptr<Backend> make_backend();
}
namespace cutlass_backend {
std::shared_ptr<Backend> make_backend();
}
namespace triton_backend {
std::shared_ptr<Backend> make_backend();
}
namespace unfused {
std::shared_ptr<Backend> make_backend();
}
namespace rowops {
std::shared_ptr<RowOpBackend> make_backend();
}
namespace triton_rowops {
std::shared_ptr<RowOpBackend> make_backend();
}
namespace cute_rowops {
std::shared_ptr<RowOpBackend> make_backend();
}
namespace faulty {
std::shared_ptr<Backend> make_gemm_backend();
std::shared_ptr<RowOpBackend> make_rowop_backend();
}  // namespace faulty
}  // namespace gf
