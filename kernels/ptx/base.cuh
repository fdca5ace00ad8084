#pragma once
// What every PTX wrapper needs: the basic types and shared-memory addresses.
#include "common/types.h"

namespace gf {

__device__ __forceinline__ u32 smem_addr(const void* p) { return u32(__cvta_generic_to_shared(p)); }

}  // namespace gf
