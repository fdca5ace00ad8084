#pragma once
// Warp-wide 8x8 matrix moves between registers and shared memory (16-bit elements). In each of the
// four matrices thread t holds row t / 4, columns 2 (t % 4) and + 1, in one 32-bit register: the
// layout of a wgmma accumulator's 8-column groups once packed to 16 bits. Lanes 8j..8j+7 give the
// addresses of matrix j's rows (16 contiguous bytes each).
#include "ptx/base.cuh"

namespace gf::ptx {

__device__ __forceinline__ void stmatrix_x4(void* row, const u32 (&v)[4]) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(smem_addr(row)), "r"(v[0]),
               "r"(v[1]), "r"(v[2]), "r"(v[3])
               : "memory");
}

__device__ __forceinline__ void ldmatrix_x4(const void* row, u32 (&v)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(v[0]), "=r"(v[1]), "=r"(v[2]), "=r"(v[3])
               : "r"(smem_addr(row))
               : "memory");
}

}  // namespace gf::ptx
