"""The package without a GPU: import, problems, models, the DB, errors, fake kernels, tracing, optimize's rewrites."""
import json
import os

import pytest
import torch
from torch import nn

import gemmforge
import gemmforge.torch as gft


def test_version_and_cli_beside_the_module():
    assert gemmforge.__version__
    from gemmforge import _cli

    assert os.access(_cli.executable(), os.X_OK)


def test_problem_round_trip():
    p = gemmforge.problem("4096x6144x4096:bf16:bias")
    assert (p.m, p.n, p.k, p.dtype, p.epilogue) == (4096, 6144, 4096, "bf16", "bias")
    assert gemmforge.problem(p.key()) == p and hash(gemmforge.problem(p.key())) == hash(p)
    assert gemmforge.problem("16x28672x4096:bf16:swiglu").out_cols == 14336
    r = gemmforge.rowop("rmsnorm+residual:4096x4096:bf16")
    assert (r.op, r.rows, r.cols, r.residual) == ("rmsnorm", 4096, 4096, True)


@pytest.mark.parametrize("spec", ["", "4096x", "0x1x1:bf16", "16x16x16:bf17", "16x16x16:bf16:frobnicate",
                                  "1" * 40 + "x1x1"])
def test_bad_specs_raise_one_line(spec):
    with pytest.raises(gemmforge.Error) as e:
        gemmforge.problem(spec)
    assert isinstance(e.value, RuntimeError) and "\n" not in str(e.value) and str(e.value)


def test_runtime_gemm_takes_pdl():
    # Programmatic dependent launch from Python: a keyword of Runtime.gemm (its GPU use is C++'s
    # Native.PdlChainMatchesPlainLaunches).
    assert "pdl" in gemmforge.Runtime.gemm.__doc__


def test_model_problems():
    gemms = gemmforge.model_problems("llama3-8b", tokens=[16, 4096])
    assert [g.name for g in gemms[:5]] == ["qkv", "o", "gate_up", "down", "lm_head"]
    assert gemms[0].problem.key() == "16x6144x4096:bf16" and len(gemms) == 10
    fused = gemmforge.model_problems("llama3-8b", tokens=[16], fuse="natural")
    assert fused[2].problem.epilogue == "swiglu"
    cfg = {"hidden_size": 1024, "num_attention_heads": 16, "num_key_value_heads": 4, "intermediate_size": 2816,
           "vocab_size": 1000, "model_type": "tiny"}
    g = gemmforge.model_problems(hf_config=cfg, tokens=[77])
    assert g[0].problem.key() == "77x1536x1024:bf16"
    with pytest.raises(gemmforge.Error, match="hidden_size"):
        gemmforge.model_problems(hf_config={"model_type": "broken"}, tokens=[1])
    with pytest.raises(gemmforge.Error):
        gemmforge.model_problems("llama3-8b", tokens=[0])
    with pytest.raises(gemmforge.Error):
        gemmforge.model_problems("no-such-model", tokens=[16])


def test_db_inspection(tmp_path):
    db = tmp_path / "t.db"
    assert gemmforge.db.decisions(db) == [] and gemmforge.db.clear(db) == 0
    exported = gemmforge.db.export(db)
    assert exported == {"gemmforge_tuning_export": 1, "decisions": []}
    assert gemmforge.db.import_(exported, tmp_path / "u.db") == 0
    with pytest.raises(gemmforge.Error, match="not a gemmforge tuning export"):
        gemmforge.db.import_({"decisions": []}, db)
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"not a database at all" * 100)
    with pytest.raises(gemmforge.Error, match="bad.db"):
        gemmforge.db.decisions(bad)


def test_device_without_gpu_says_why():
    d = gemmforge.device()
    if not torch.cuda.is_available():
        assert d["present"] is False and d["absent_reason"]


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error a machine without a GPU gives")
def test_tune_without_gpu_is_a_clear_error():
    with pytest.raises(gemmforge.Error):
        gemmforge.tune("64x64x64:bf16", progress=False, backends=["cublaslt"])


def test_ops_are_registered():
    for name in ("linear", "mm", "rms_norm", "fused_add_rms_norm", "layer_norm", "softmax", "swiglu", "gelu",
                 "scaled_mm", "quantize_fp8", "quantize_fp8_static", "quantize_fp8_delayed"):
        assert hasattr(torch.ops.gemmforge, name), name


def test_fake_kernels():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        x = torch.empty(3, 77, 256, dtype=torch.bfloat16, device="meta")
        w = torch.empty(512, 256, dtype=torch.bfloat16, device="meta")
        assert torch.ops.gemmforge.linear(x, w).shape == (3, 77, 512)
        assert torch.ops.gemmforge.linear(x, w, epilogue="swiglu").shape == (3, 77, 256)
        assert torch.ops.gemmforge.linear(x, w, epilogue="swiglu_split").shape == (3, 77, 256)
        assert torch.ops.gemmforge.mm(x[0], w.t()).shape == (77, 512)
        n = torch.empty(256, dtype=torch.bfloat16, device="meta")
        assert torch.ops.gemmforge.rms_norm(x, n, 1e-6).shape == x.shape
        y, s = torch.ops.gemmforge.fused_add_rms_norm(x, x, n, 1e-6)
        assert y.shape == s.shape == x.shape
        assert torch.ops.gemmforge.layer_norm(x, n, n, 1e-5).shape == x.shape
        assert torch.ops.gemmforge.softmax(x, 0.5).shape == x.shape
        assert torch.ops.gemmforge.swiglu(x, x).shape == x.shape
        assert torch.ops.gemmforge.gelu(x, "tanh").shape == x.shape
        q = torch.empty(77, 256, dtype=torch.float8_e4m3fn, device="meta")
        wq = torch.empty(512, 256, dtype=torch.float8_e4m3fn, device="meta")
        one = torch.empty((), dtype=torch.float32, device="meta")
        y = torch.ops.gemmforge.scaled_mm(q, wq.t(), one, one, None, torch.float16)
        assert y.shape == (77, 512) and y.dtype == torch.float16
        qx, sx = torch.ops.gemmforge.quantize_fp8(x, "row", torch.float8_e4m3fn)
        assert qx.shape == x.shape and qx.dtype == torch.float8_e4m3fn and sx.shape == (3 * 77, 1)
        assert torch.ops.gemmforge.quantize_fp8(x, "tensor", torch.float8_e5m2)[1].shape == ()
        # Block scales as scaled_mm takes them: 1x128 groups M-major, 128x128 blocks row-major.
        _, groups = torch.ops.gemmforge.quantize_fp8(x, "1x128")
        assert groups.shape == (3 * 77, -(-x.shape[-1] // 128)) and groups.stride() == (1, 3 * 77)
        assert torch.ops.gemmforge.quantize_fp8(x, "128x128")[1].shape == (2, -(-x.shape[-1] // 128))
        qs = torch.ops.gemmforge.quantize_fp8_static(x, one, torch.float8_e5m2)
        assert qs.shape == x.shape and qs.dtype == torch.float8_e5m2
        qd, amax = torch.ops.gemmforge.quantize_fp8_delayed(x, one)
        assert qd.shape == x.shape and qd.dtype == torch.float8_e4m3fn and amax.shape == ()


class TinyMLP(nn.Module):
    def __init__(self, h=64, i=128):
        super().__init__()
        self.gate_proj, self.up_proj, self.down_proj = nn.Linear(h, i, bias=False), nn.Linear(h, i, bias=False), \
            nn.Linear(i, h, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class TinyRMSNorm(nn.Module):
    def __init__(self, h=64):
        super().__init__()
        self.weight, self.variance_epsilon = nn.Parameter(torch.ones(h)), 1e-6

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.variance_epsilon) * self.weight


class TinyBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm, self.mlp = TinyRMSNorm(), TinyMLP()
        self.head = nn.Sequential(nn.Linear(64, 32), nn.GELU(approximate="tanh"))
        self.ln = nn.LayerNorm(32)

    def forward(self, x):
        return self.ln(self.head(x + self.mlp(self.norm(x))))


def test_optimize_rewrites_modules_and_interleaves_gate_up():
    torch.manual_seed(0)
    block = TinyBlock().to(torch.bfloat16)
    gate, up = block.mlp.gate_proj.weight.clone(), block.mlp.up_proj.weight.clone()
    gft.optimize(block, tune=False)
    assert isinstance(block.norm, gft.RMSNorm) and block.norm.eps == 1e-6
    assert isinstance(block.mlp, gft.GatedMLP) and isinstance(block.mlp.down, gft.Linear)
    assert torch.equal(block.mlp.gate_up[0::2], gate) and torch.equal(block.mlp.gate_up[1::2], up)
    assert isinstance(block.head[0], gft.Linear) and block.head[0].epilogue == "gelu_tanh"
    assert isinstance(block.head[1], nn.Identity) and isinstance(block.ln, gft.LayerNorm)
    specs = gft.problems(block, [16])
    assert "16x256x64:bf16:swiglu" in specs and "16x64x128:bf16" in specs and "rmsnorm:16x64:bf16" in specs
    assert "16x32x64:bf16:bias+gelu_tanh" in specs and "layernorm:16x32:bf16" in specs
    assert "16x64x128:bf16:residual" in specs  # down as wide as the norms: a residual under torch.compile
    for s in specs:  # every spec the model runs is one the library parses
        (gemmforge.rowop if s[0].isalpha() else gemmforge.problem)(s)


def test_training_problems_are_the_backward_gemms():
    block = gft.optimize(TinyBlock().to(torch.bfloat16), tune=False)
    specs = gft.problems(block, [16], backward=True)
    # gate/up (N = 256, K = 64) without its fused SwiGLU, then dX = dY W and dW = dY^T X, layout NN.
    assert {"16x256x64:bf16", "16x64x256:bf16:nn", "256x64x16:bf16:nn"} <= set(specs)
    assert not any(s.startswith(("rmsnorm", "layernorm")) for s in specs)  # the norms run in torch
    for s in specs:
        gemmforge.problem(s)


def test_optimize_refuses_float32_models():
    with pytest.raises(gemmforge.Error, match="bf16"):
        gft.optimize(TinyBlock(), tune=False)


def test_compile_traces_without_graph_breaks():
    block = gft.optimize(TinyBlock().to(torch.bfloat16), tune=False).to("meta")
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    compiled = torch.compile(block, backend=backend, fullgraph=True)
    with torch.no_grad():  # with gradients, the norms and fused epilogues run in torch
        out = compiled(torch.empty(2, 5, 64, dtype=torch.bfloat16, device="meta"))
    assert out.shape == (2, 5, 32) and len(graphs) == 1
    targets = {str(n.target) for n in graphs[0].graph.nodes if n.op == "call_function"}
    assert any("gemmforge.linear" in t for t in targets) and any("gemmforge.rms_norm" in t for t in targets)


def test_bad_inputs_raise():
    x = torch.randn(4, 8, dtype=torch.bfloat16)
    with pytest.raises(gemmforge.Error, match="CUDA"):
        torch.ops.gemmforge.linear(x, x)
    with pytest.raises(gemmforge.Error, match="CUDA"):
        torch.ops.gemmforge.rms_norm(x, torch.ones(8, dtype=torch.bfloat16), 1e-6)


def test_inductor_route_registers_once():
    import torch._inductor.config as config
    import torch._inductor.select_algorithm as sa

    import gemmforge.torch.inductor as gfi

    gfi.enable()
    gfi.enable()
    assert config.external_matmul.count(gfi.gemmforge_mm) == 1
    assert hasattr(sa.extern_kernels, "gemmforge_mm")
    gfi.disable()
    assert gfi.gemmforge_mm not in config.external_matmul


def test_residual_add_folds_into_the_linear():
    from torch.fx.experimental.proxy_tensor import make_fx

    from gemmforge.torch import passes

    def f(x, w, r, s):
        y = r + torch.ops.gemmforge.linear(x, w)  # folds
        z = torch.ops.gemmforge.linear(x, w) + s  # broadcast: stays
        return y, z, torch.ops.gemmforge.linear(x, w, None, None, "gelu") + r  # activation: stays

    args = (torch.empty(8, 16, dtype=torch.bfloat16), torch.empty(32, 16, dtype=torch.bfloat16),
            torch.empty(8, 32, dtype=torch.bfloat16), torch.empty(32, dtype=torch.bfloat16))
    gm = make_fx(f, tracing_mode="fake")(*(a.to("meta") for a in args))
    assert passes.fuse_residual_adds(gm.graph) == 1
    gm.graph.lint()
    linears = [n for n in gm.graph.nodes if n.target is torch.ops.gemmforge.linear.default]
    adds = [n for n in gm.graph.nodes if n.target is torch.ops.aten.add.Tensor]
    assert len(linears) == 3 and len(adds) == 2
    assert sum(1 for n in linears if len(n.args) > 3 and n.args[3] is not None) == 1
    assert passes.install() and passes.install()
