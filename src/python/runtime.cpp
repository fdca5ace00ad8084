#include "gemmforge/runtime.hpp"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>

#include "gemmforge/error.hpp"
#include "gemmforge/ops.hpp"
#include "python/bindings.hpp"

namespace nb = nanobind;

// Device pointers and streams cross as integers (torch's data_ptr() and cuda_stream), so the
// module depends on no framework's C++ ABI. The runtime checks what it is given and raises.
namespace gf::python {
namespace {

template <class T = void>
T* ptr(uintptr_t p) {
  return reinterpret_cast<T*>(p);
}
cudaStream_t stream_of(uintptr_t s) { return reinterpret_cast<cudaStream_t>(s); }
DType dtype_of(const std::string& name) {
  auto t = parse_dtype(name);
  GF_CHECK(t, "unknown dtype '{}'", name);
  return *t;
}

}  // namespace

void bind_runtime(nb::module_& m) {
  nb::class_<Runtime>(m, "Runtime", "Dispatch to the tuned kernel of each problem (thread- and stream-safe)")
      .def(
          "__init__", [](Runtime* r, const std::string& db) { new (r) Runtime(RuntimeOptions{.db_path = db}); },
          nb::arg("db") = "")
      .def(
          "gemm",
          [](Runtime& r, const GemmProblem& p, uintptr_t a, uintptr_t b, uintptr_t d, uintptr_t c, uintptr_t bias,
             size_t bias_len, uintptr_t stream, uintptr_t scale_a, uintptr_t scale_b, uintptr_t scale_d, bool pdl,
             size_t scale_a_len, size_t scale_b_len) {
            GemmArgs args{.a = ptr(a),
                          .b = ptr(b),
                          .d = ptr(d),
                          .c = ptr(c),
                          .bias = ptr(bias),
                          .bias_len = bias_len,
                          .scale_a = ptr<const float>(scale_a),
                          .scale_b = ptr<const float>(scale_b),
                          .scale_a_len = scale_a_len,
                          .scale_b_len = scale_b_len,
                          .scale_d = ptr<const float>(scale_d),
                          .pdl = pdl};
            r.gemm(p, args, stream_of(stream));
          },
          nb::arg("problem"), nb::arg("a"), nb::arg("b"), nb::arg("d"), nb::arg("c") = 0, nb::arg("bias") = 0,
          nb::arg("bias_len") = 0, nb::arg("stream") = 0, nb::arg("scale_a") = 0, nb::arg("scale_b") = 0,
          nb::arg("scale_d") = 0, nb::arg("pdl") = false, nb::arg("scale_a_len") = 0, nb::arg("scale_b_len") = 0,
          Release(),
          "D = epilogue(A B^T) on the stream, by the kernel the DB chose (or cuBLASLt's default); fp8 problems take "
          "scale_a and scale_b, fp32 device pointers (one float, or one per row; their lengths, where given, are "
          "checked); an fp8 D its scale_d (one float). "
          "pdl: programmatic dependent launch, the kernel starting under the stream's previous one (native kernels "
          "prefetch their weights meanwhile; decode chains save the launch gaps)")
      .def(
          "prepare",
          [](Runtime& r, const std::vector<GemmProblem>& problems, const std::vector<uintptr_t>& streams) {
            std::vector<cudaStream_t> s;
            for (uintptr_t x : streams) s.push_back(stream_of(x));
            if (s.empty()) s.push_back(nullptr);
            r.prepare(problems, s);
          },
          nb::arg("problems"), nb::arg("streams") = std::vector<uintptr_t>{}, Release(),
          "Builds the problems' kernels and workspaces ahead, so their calls can be captured in a CUDA graph")
      .def("choice", &Runtime::choice, nb::arg("problem"), Release(), "'backend:candidate' that gemm() runs");

  nb::class_<OpsRuntime>(m, "OpsRuntime", "Row ops with their tuned configs (or defaults)")
      .def(nb::init<const std::string&>(), nb::arg("db") = "")
      .def(
          "run",
          [](OpsRuntime& o, const RowOpSpec& spec, uintptr_t x, uintptr_t y, uintptr_t weight, uintptr_t bias,
             uintptr_t residual, uintptr_t residual_out, uintptr_t valid_len, float scale, float eps,
             uintptr_t stream) {
            RowOpArgs args{.x = ptr(x),
                           .y = ptr(y),
                           .weight = ptr(weight),
                           .bias = ptr(bias),
                           .residual = ptr(residual),
                           .residual_out = ptr(residual_out),
                           .valid_len = ptr<const int>(valid_len),
                           .scale = scale,
                           .eps = eps};
            o.run(spec, args, stream_of(stream));
          },
          nb::arg("spec"), nb::arg("x"), nb::arg("y"), nb::arg("weight") = 0, nb::arg("bias") = 0,
          nb::arg("residual") = 0, nb::arg("residual_out") = 0, nb::arg("valid_len") = 0, nb::arg("scale") = 1.0f,
          nb::arg("eps") = 1e-5f, nb::arg("stream") = 0, Release())
      .def("prepare", &OpsRuntime::prepare, nb::arg("specs"), Release(),
           "Builds the ops' kernels ahead, so that their calls can be captured in a CUDA graph");

  m.def(
      "swiglu",
      [](uintptr_t gate, uintptr_t up, uintptr_t out, int64_t count, const std::string& dtype, uintptr_t stream) {
        ops::swiglu(ptr(gate), ptr(up), ptr(out), count, dtype_of(dtype), stream_of(stream));
      },
      nb::arg("gate"), nb::arg("up"), nb::arg("out"), nb::arg("count"), nb::arg("dtype"), nb::arg("stream") = 0,
      Release(), "out = silu(gate) * up, elementwise");
  m.def(
      "gelu",
      [](uintptr_t x, uintptr_t out, int64_t count, const std::string& dtype, bool tanh, uintptr_t stream) {
        ops::gelu(ptr(x), ptr(out), count, dtype_of(dtype), tanh, stream_of(stream));
      },
      nb::arg("x"), nb::arg("out"), nb::arg("count"), nb::arg("dtype"), nb::arg("tanh") = false, nb::arg("stream") = 0,
      Release(), "out = gelu(x): the erf form, or the tanh approximation");
  m.def(
      "quantize_fp8",
      [](uintptr_t x, uintptr_t q, uintptr_t scales, int64_t rows, int64_t cols, const std::string& scaling,
         const std::string& in, const std::string& out, uintptr_t stream) {
        ops::quantize_fp8(ptr(x), ptr(q), ptr<float>(scales), rows, cols, ops::parse_quant_scaling(scaling),
                          dtype_of(in), dtype_of(out), stream_of(stream));
      },
      nb::arg("x"), nb::arg("q"), nb::arg("scales"), nb::arg("rows"), nb::arg("cols"), nb::arg("scaling"),
      nb::arg("dtype"), nb::arg("out_dtype"), nb::arg("stream") = 0, Release(),
      "q = saturate(x / scale), scale = amax / fp8 max, per group: tensor, row, 1x128 or 128x128");
  m.def(
      "quantize_fp8_delayed",
      [](uintptr_t x, uintptr_t q, uintptr_t scale, uintptr_t amax, int64_t rows, int64_t cols, const std::string& in,
         const std::string& out, uintptr_t stream) {
        ops::quantize_fp8_delayed(ptr(x), ptr(q), ptr<float>(scale), ptr<float>(amax), rows, cols, dtype_of(in),
                                  dtype_of(out), stream_of(stream));
      },
      nb::arg("x"), nb::arg("q"), nb::arg("scale"), nb::arg("amax"), nb::arg("rows"), nb::arg("cols"), nb::arg("dtype"),
      nb::arg("out_dtype"), nb::arg("stream") = 0, Release(),
      "q = saturate(x / scale) by the scale given, and x's amax into amax in the same pass");
}

}  // namespace gf::python
