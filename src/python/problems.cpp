#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include <nlohmann/json.hpp>

#include "gemmforge/error.hpp"
#include "gemmforge/problem.hpp"
#include "gemmforge/rowop.hpp"
#include "gemmforge/workloads.hpp"
#include "python/bindings.hpp"

namespace nb = nanobind;

namespace gf::python {
namespace {

std::vector<ModelGemm> gemms_of(const ModelShape& shape, const std::vector<int64_t>& tokens, const std::string& dtype,
                                const std::string& fuse) {
  auto dt = parse_dtype(dtype);
  GF_CHECK(dt, "unknown dtype '{}' (bf16, f16, e4m3, e5m2)", dtype);
  GF_CHECK(fuse == "none" || fuse == "natural", "fuse takes 'none' or 'natural', not '{}'", fuse);
  GF_CHECK(!tokens.empty(), "no token counts given");
  for (int64_t t : tokens) GF_CHECK(t > 0, "token counts must be positive, not {}", t);
  return model_gemms(shape, tokens, *dt, fuse == "natural" ? Fuse::natural : Fuse::none);
}

// What both problem families show Python alike: their key as text, equality and hashing by it.
template <class Problem>
void bind_keyed(nb::class_<Problem>& c, std::string maker) {
  c.def("key", &Problem::key)
      .def("__str__", &Problem::key)
      .def("__repr__", [maker](const Problem& p) { return maker + "('" + p.key() + "')"; })
      .def("__eq__", [](const Problem& a, const Problem& b) { return a == b; })
      .def("__hash__", [](const Problem& p) { return nb::hash(nb::str(p.key().c_str())); });
}

}  // namespace

void bind_problems(nb::module_& m) {
  auto gemm = nb::class_<GemmProblem>(m, "GemmProblem", "One GEMM with its epilogue: D = epilogue(A B^T)");
  gemm.def_static("parse", &GemmProblem::parse, nb::arg("spec"),
                  "Parses 'MxNxK[xBATCH][:dtype[xdtype_b][->out]][:tn|nn][:epilogue]'; raises gemmforge.Error")
      .def_ro("m", &GemmProblem::m)
      .def_ro("n", &GemmProblem::n)
      .def_ro("k", &GemmProblem::k)
      .def_ro("batch", &GemmProblem::batch)
      .def_prop_ro("dtype", [](const GemmProblem& p) { return std::string(to_string(p.a)); })
      .def_prop_ro("dtype_b", [](const GemmProblem& p) { return std::string(to_string(p.b)); })
      .def_prop_ro("out_dtype", [](const GemmProblem& p) { return std::string(to_string(p.out)); })
      .def_prop_ro("layout", [](const GemmProblem& p) { return std::string(to_string(p.layout)); })
      .def_prop_ro("epilogue", [](const GemmProblem& p) { return p.epilogue.to_string(); })
      .def_prop_ro("out_cols", &GemmProblem::out_cols)
      .def_prop_ro("flops", &GemmProblem::flops);
  bind_keyed(gemm, "gemmforge.problem");

  auto rowop = nb::class_<RowOpSpec>(m, "RowOpSpec", "One row op: softmax, RMSNorm or LayerNorm over rows x cols");
  rowop
      .def_static("parse", &RowOpSpec::parse, nb::arg("spec"),
                  "Parses 'OP[+residual|+valid]:ROWSxCOLS[:dtype[->out]]'; raises gemmforge.Error")
      .def_ro("rows", &RowOpSpec::rows)
      .def_ro("cols", &RowOpSpec::cols)
      .def_prop_ro("op", [](const RowOpSpec& s) { return std::string(to_string(s.kind)); })
      .def_prop_ro("dtype", [](const RowOpSpec& s) { return std::string(to_string(s.in)); })
      .def_prop_ro("out_dtype", [](const RowOpSpec& s) { return std::string(to_string(s.out)); })
      .def_ro("residual", &RowOpSpec::residual);
  bind_keyed(rowop, "gemmforge.rowop");

  nb::class_<ModelGemm>(m, "ModelGemm", "One GEMM of a model: its layer name and problem")
      .def_ro("model", &ModelGemm::model)
      .def_ro("name", &ModelGemm::name)
      .def_ro("problem", &ModelGemm::problem)
      .def("__repr__", [](const ModelGemm& g) { return g.model + " " + g.name + " " + g.problem.key(); });

  m.def("builtin_models", &builtin_models, "The model names shipped in the library");
  m.def(
      "model_gemms",
      [](const std::string& name_or_path, const std::vector<int64_t>& tokens, const std::string& dtype,
         const std::string& fuse) { return gemms_of(load_model(name_or_path), tokens, dtype, fuse); },
      nb::arg("model"), nb::arg("tokens"), nb::arg("dtype") = "bf16", nb::arg("fuse") = "none",
      "A shipped model's (or a config.json's) GEMMs at these token counts");
  m.def(
      "config_gemms",
      [](const std::string& config_json, const std::string& name, const std::vector<int64_t>& tokens,
         const std::string& dtype, const std::string& fuse) {
        auto config = nlohmann::json::parse(config_json, nullptr, false);
        GF_CHECK(config.is_object(), "the Hugging Face config of {} is not a JSON object", name);
        return gemms_of(ModelShape::from_config(config, name), tokens, dtype, fuse);
      },
      nb::arg("config_json"), nb::arg("name"), nb::arg("tokens"), nb::arg("dtype") = "bf16", nb::arg("fuse") = "none",
      "The GEMMs of a Hugging Face config (as JSON text) at these token counts");
}

}  // namespace gf::python
