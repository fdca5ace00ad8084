#pragma once
// The activations of the Epilogue, in fp32, for the nvcc-compiled kernels (the reference, the
// epilogue kernel, the elementwise ops). The code is gf::Activation's: 0 none, 1 relu, 2 gelu
// (erf), 3 gelu (tanh approximation), 4 silu.
namespace gf::ops {

__device__ __forceinline__ float activate(float x, int act) {
  switch (act) {
    case 1:
      return fmaxf(x, 0.0f);
    case 2:
      return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
    case 3:
      return 0.5f * x * (1.0f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
    case 4:
      return x / (1.0f + expf(-x));
    default:
      return x;
  }
}

}  // namespace gf::ops
