#pragma once
// Inputs and poison for measurements: random fills, NaN in outputs (an element a kernel fails to
// write fails verification), and guard bands after outputs (a kernel that writes past one fails).
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "gemmforge/dtype.hpp"

namespace gf::harness {

// Uniform values in [lo, hi), rounded to t; a different stream of values per seed.
void fill_uniform(void* ptr, DType t, int64_t count, uint64_t seed, float lo, float hi, cudaStream_t s);
// NaN in every element.
void fill_nan(void* ptr, DType t, int64_t count, cudaStream_t s);

// Reads every byte of [ptr, ptr + bytes) (a multiple of 16, 16-byte aligned) and writes nothing:
// the timer's L2 flush, which leaves only clean lines behind.
void read_through(const void* ptr, size_t bytes, cudaStream_t s);

// Bytes of guard band kept after each output: more than a row of tiles past the end would reach.
inline constexpr size_t kGuardBytes = 256 << 10;
// A known byte pattern over [ptr, ptr + bytes).
void fill_guard(void* ptr, size_t bytes, cudaStream_t s);
// Bytes of the guard band that no longer hold the pattern; synchronizes the stream.
int64_t guard_damage(const void* ptr, size_t bytes, cudaStream_t s);

}  // namespace gf::harness
