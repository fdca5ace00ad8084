#pragma once
// Basic types for NVRTC-compiled kernels. No CUDA headers are included: they would cost compile
// time, and these kernels need only a few types.
namespace gf {

using u8 = unsigned char;
using u16 = unsigned short;
using u32 = unsigned int;
using u64 = unsigned long long;
using i64 = long long;

// A CUtensorMap as the driver encodes it: 128 opaque bytes, 64-byte aligned.
struct alignas(64) TmaDesc {
  u64 opaque[16];
};

__device__ __forceinline__ u32 smem_addr(const void* p) { return u32(__cvta_generic_to_shared(p)); }

}  // namespace gf
