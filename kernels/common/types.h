#pragma once
// Basic types of the device code, plain C++ so that host code that shares a layout with a kernel
// (its parameters, its shared memory) includes them too. No CUDA headers: they would cost NVRTC
// compile time, and these kernels need only a few types.
namespace gf {

using u8 = unsigned char;
using u16 = unsigned short;
using u32 = unsigned int;
using u64 = unsigned long long;
using i64 = long long;

// T when kCond holds, else F (std::conditional, which NVRTC's headerless builds lack).
template <bool kCond, class T, class F>
struct Select {
  using type = T;
};
template <class T, class F>
struct Select<false, T, F> {
  using type = F;
};

// A CUtensorMap as the driver encodes it: 128 opaque bytes, 64-byte aligned.
struct alignas(64) TmaDesc {
  u64 opaque[16];
};

}  // namespace gf
