#pragma once
// The C entry points of a unit (abi.h) over the generated `GfUnit` (a gf_cutlass::Unit of the
// unit's instances) and `gf_unit_names` (their names, in order). Included last by generated units.
#include <cstdio>
#include <type_traits>

#include "gemm/cutlass/abi.h"

// Units build with -fvisibility=hidden: only these leave the shared object, so the CUTLASS
// templates two units both instantiate never bind to each other's copies.
#define GF_CUTLASS_EXPORT extern "C" __attribute__((visibility("default")))

GF_CUTLASS_EXPORT int gf_cutlass_abi(void) { return GF_CUTLASS_ABI; }
GF_CUTLASS_EXPORT int gf_cutlass_count(void) { return GfUnit::count; }
GF_CUTLASS_EXPORT const char* gf_cutlass_name(int i) { return i >= 0 && i < GfUnit::count ? gf_unit_names[i] : nullptr; }

GF_CUTLASS_EXPORT size_t gf_cutlass_workspace_bytes(int i, const gf_cutlass_problem* p) {
  return GfUnit::dispatch<size_t>(i, [&](auto instance) { return decltype(instance)::type::workspace_bytes(*p); });
}

GF_CUTLASS_EXPORT int gf_cutlass_can_implement(int i, const gf_cutlass_problem* p, char* why, size_t why_len) {
  if (i < 0 || i >= GfUnit::count) {
    std::snprintf(why, why_len, "no instance %d in a unit of %d", i, GfUnit::count);
    return 0;
  }
  return GfUnit::dispatch<int>(i, [&](auto instance) { return int(decltype(instance)::type::can_implement(*p, why, why_len)); });
}

GF_CUTLASS_EXPORT void* gf_cutlass_prepare(int i, const gf_cutlass_problem* p, void* stream, char* why, size_t why_len) {
  if (!gf_cutlass_can_implement(i, p, why, why_len)) return nullptr;
  return GfUnit::dispatch<void*>(i, [&](auto instance) {
    return decltype(instance)::type::prepare(*p, static_cast<cudaStream_t>(stream), why, why_len);
  });
}

// The handle knows its instance: run and release take no index.
GF_CUTLASS_EXPORT int gf_cutlass_run(void* handle, void* stream) {
  return static_cast<gf_cutlass::HandleBase*>(handle)->run(static_cast<cudaStream_t>(stream));
}
GF_CUTLASS_EXPORT void gf_cutlass_release(void* handle) { delete static_cast<gf_cutlass::HandleBase*>(handle); }
