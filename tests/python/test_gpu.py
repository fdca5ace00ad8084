"""The torch ops on the GPU: numerics against torch on awkward sizes, backward, opcheck, CUDA
graphs, torch.compile, optimize() on a decoder layer, bad inputs. Skipped without a GPU."""
import pytest
import torch
import torch.nn.functional as F

import gemmforge
import gemmforge.torch as gft

pytestmark = pytest.mark.gpu
BF16 = torch.bfloat16


def close(got, want, tol=2e-2):
    got, want = got.float(), want.float()
    assert torch.isfinite(got).all(), "non-finite values in the result"
    err = (got - want).abs().max().item() / max(want.abs().max().item(), 1e-3)
    assert err < tol, f"relative error {err:.3g}"


def rand(*shape, dtype=BF16):
    return torch.randn(*shape, device="cuda", dtype=dtype)


@pytest.mark.parametrize("m,n,k", [(1, 64, 64), (77, 200, 136), (130, 384, 1000), (3 * 5, 512, 256)])
@pytest.mark.parametrize("epilogue", ["", "bias", "residual", "bias+gelu", "silu", "swiglu"])
def test_linear_matches_torch(m, n, k, epilogue):
    x, w = rand(m, k) / k**0.5, rand(n, k)
    bias = rand(n) if "bias" in epilogue else None
    gated = epilogue == "swiglu"
    residual = rand(m, n // 2 if gated else n) if "residual" in epilogue else None
    act = epilogue.replace("bias", "").replace("residual", "").strip("+")
    y = torch.ops.gemmforge.linear(x, w, bias, residual, act)
    ref = x.float() @ w.float().t() + (bias.float() if bias is not None else 0)
    if residual is not None:
        ref = ref + residual.float()
    if act == "gelu":
        ref = F.gelu(ref)
    elif act == "silu":
        ref = F.silu(ref)
    elif gated:
        ref = F.silu(ref[:, 0::2]) * ref[:, 1::2]
    close(y, ref)


def test_linear_views_and_batches():
    base = rand(4 * 96 * 129 + 1)
    x = base[1:1 + 4 * 96 * 128].view(4, 96, 128)  # 2-byte aligned view
    w = rand(256, 130)[:, 1:129]  # non-contiguous: copied
    close(torch.ops.gemmforge.linear(x, w), x.float() @ w.float().t())


def test_linear_backward_matches_torch():
    x = (rand(77, 256) / 16).requires_grad_()
    w = (rand(384, 256) / 16).requires_grad_()
    b = rand(384).requires_grad_()
    r = rand(77, 384).requires_grad_()
    g = rand(77, 384)
    torch.ops.gemmforge.linear(x, w, b, r, "").backward(g)
    got = [t.grad.clone() for t in (x, w, b, r)]
    for t in (x, w, b, r):
        t.grad = None
    (F.linear(x, w, b) + r).backward(g)
    for a, e in zip(got, (x.grad, w.grad, b.grad, r.grad)):
        close(a, e)


def test_row_ops_and_elementwise_match_torch():
    x, res, wt, bs = rand(77, 4096), rand(77, 4096), rand(4096), rand(4096)
    close(torch.ops.gemmforge.rms_norm(x, wt, 1e-6), F.rms_norm(x.float(), (4096,), wt.float(), 1e-6))
    y, s = torch.ops.gemmforge.fused_add_rms_norm(x, res, wt, 1e-6)
    close(s, x.float() + res.float())
    close(y, F.rms_norm(s.float(), (4096,), wt.float(), 1e-6))
    close(torch.ops.gemmforge.layer_norm(x, wt, bs, 1e-5), F.layer_norm(x.float(), (4096,), wt.float(), bs.float()))
    z = rand(33, 1000)
    close(torch.ops.gemmforge.softmax(z, 0.125), torch.softmax(z.float() * 0.125, -1))
    gate, up = rand(1001), rand(1001)
    close(torch.ops.gemmforge.swiglu(gate, up), F.silu(gate.float()) * up.float())
    close(torch.ops.gemmforge.gelu(gate, "tanh"), F.gelu(gate.float(), approximate="tanh"))
    close(torch.ops.gemmforge.gelu(gate, "none"), F.gelu(gate.float()))


def test_opcheck():
    x, w, b = rand(16, 64), rand(128, 64), rand(128)
    n = rand(64)
    cases = [
        (torch.ops.gemmforge.linear.default, (x, w, b, None, "")),
        (torch.ops.gemmforge.linear.default, (x, w, None, None, "swiglu")),
        (torch.ops.gemmforge.mm.default, (x, w.t().contiguous())),
        (torch.ops.gemmforge.rms_norm.default, (x, n, 1e-6)),
        (torch.ops.gemmforge.fused_add_rms_norm.default, (x, x.clone(), n, 1e-6)),
        (torch.ops.gemmforge.layer_norm.default, (x, n, n.clone(), 1e-5)),
        (torch.ops.gemmforge.softmax.default, (x, 1.0)),
        (torch.ops.gemmforge.swiglu.default, (x, x.clone())),
        (torch.ops.gemmforge.gelu.default, (x, "none")),
    ]
    cases += [(torch.ops.gemmforge.quantize_fp8.default, (x, scaling, torch.float8_e4m3fn))
              for scaling in ("tensor", "row", "1x128", "128x128")]
    qx, sx = torch.ops.gemmforge.quantize_fp8(x, "row")
    qw, sw = torch.ops.gemmforge.quantize_fp8(w, "row")
    cases.append((torch.ops.gemmforge.scaled_mm.default, (qx, qw.t(), sx, sw.t(), None, BF16)))
    cases.append((torch.ops.gemmforge.quantize_fp8_static.default, (x, sx[0, 0].clone(), torch.float8_e4m3fn)))
    cases.append((torch.ops.gemmforge.quantize_fp8_delayed.default, (x, sx[0, 0].clone(), torch.float8_e4m3fn)))
    fp8_ops = (torch.ops.gemmforge.quantize_fp8.default, torch.ops.gemmforge.scaled_mm.default,
               torch.ops.gemmforge.quantize_fp8_static.default, torch.ops.gemmforge.quantize_fp8_delayed.default)
    for op, args in cases:
        # The fake kernels, the schema and the registrations, not gradients (checked above).
        # torch's schema check compares tensors with arithmetic fp8 lacks ("mul_cuda" not
        # implemented for Float8_e4m3fn, torch 2.11): the fp8 ops' schemas are checked by the rest.
        utils = ("test_faketensor", "test_aot_dispatch_static")
        torch.library.opcheck(op, args, test_utils=utils if op in fp8_ops else ("test_schema",) + utils)


def test_cuda_graph_replay():
    x, w, n = rand(64, 512), rand(1024, 512), rand(1024)
    gft.prepare([gft.gemm_spec(64, 1024, 512, "bf16")])
    stream = torch.cuda.graph.default_capture_stream
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):  # warm-up on the capture stream, as torch advises
        torch.ops.gemmforge.rms_norm(torch.ops.gemmforge.linear(x, w), n, 1e-6)
    torch.cuda.current_stream().wait_stream(stream)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = torch.ops.gemmforge.rms_norm(torch.ops.gemmforge.linear(x, w), n, 1e-6)
    for _ in range(3):
        x.copy_(rand(64, 512))
        g.replay()
        torch.cuda.synchronize()
        close(y, F.rms_norm((x.float() @ w.float().t()), (1024,), n.float(), 1e-6))


def test_cuda_graph_after_prepare_without_warm_up():
    x, w, n = rand(48, 256), rand(512, 256), rand(512)
    gft.prepare([gft.gemm_spec(48, 512, 256, "bf16"), "rmsnorm:48x512:bf16"])
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = torch.ops.gemmforge.rms_norm(torch.ops.gemmforge.linear(x, w), n, 1e-6)
    g.replay()
    torch.cuda.synchronize()
    close(y, F.rms_norm((x.float() @ w.float().t()), (512,), n.float(), 1e-6))


def test_compiled_module_matches_eager():
    lin = torch.nn.Linear(256, 512, dtype=BF16, device="cuda")
    m = gft.optimize(torch.nn.Sequential(lin, torch.nn.SiLU()), tune=False)
    x = rand(40, 256)
    ref = F.silu(F.linear(x.float(), lin.weight.float(), lin.bias.float()))
    close(torch.compile(m, fullgraph=True)(x), ref)


def test_bad_inputs():
    x, w = rand(16, 64), rand(32, 64)
    with pytest.raises(gemmforge.Error, match="dtype"):
        torch.ops.gemmforge.linear(x.double(), w.double())
    with pytest.raises(gemmforge.Error, match="features"):
        torch.ops.gemmforge.linear(x, rand(32, 48))
    with pytest.raises(gemmforge.Error, match="bias"):
        torch.ops.gemmforge.linear(x, w, rand(31))
    with pytest.raises(gemmforge.Error, match="cpu"):
        torch.ops.gemmforge.linear(x, w.cpu())
    with pytest.raises(gemmforge.Error):
        torch.ops.gemmforge.linear(x, rand(33, 64), None, None, "swiglu")  # odd N cannot be gated
    with pytest.raises(gemmforge.Error, match="residual"):
        torch.ops.gemmforge.linear(x, w, None, rand(16, 31))


def test_optimize_decoder_layer_matches_eager():
    from examples.decoder_layer import DecoderLayer, small_config

    torch.manual_seed(0)
    layer = DecoderLayer(small_config()).to("cuda", BF16)
    x = rand(2, 77, layer.hidden)
    with torch.no_grad():
        ref = layer(x).float()
        gft.optimize(layer, x)
        close(layer(x), ref, tol=3e-2)
        torch._dynamo.reset()
        close(torch.compile(layer)(x), ref, tol=3e-2)  # residual adds folded into o and down


def test_inductor_max_autotune_with_gemmforge():
    import gemmforge.torch.inductor as gfi

    gfi.enable()
    try:
        torch._dynamo.reset()
        lin = torch.nn.Linear(512, 768, bias=False, dtype=BF16, device="cuda")
        x = rand(96, 512)
        f = torch.compile(lambda t: lin(t), mode="max-autotune-no-cudagraphs")
        with torch.no_grad():
            close(f(x), x.float() @ lin.weight.float().t())
    finally:
        gfi.disable()
        torch._dynamo.reset()


def test_inductor_mm_choice_directly():
    import gemmforge.torch.inductor as gfi

    a, w = rand(77, 136), rand(200, 136)
    out = torch.empty(77, 200, device="cuda", dtype=BF16)
    gfi.gemmforge_mm(a, w.t(), out)  # TN: a weight's transpose
    close(out, a.float() @ w.float().t())
    b = rand(136, 200)
    gfi.gemmforge_mm(a, b, out)  # NN
    close(out, a.float() @ b.float())


def _group_amax(x, scaling):
    """Each group's amax, in the shape quantize_fp8 gives its scales."""
    rows, cols = x.shape
    a = x.float().abs()
    if scaling == "tensor":
        return a.amax()
    if scaling == "row":
        return a.amax(dim=-1, keepdim=True)
    g = -(-cols // 128)
    padded = torch.zeros(-(-rows // 128) * 128, g * 128, device=x.device)
    padded[:rows, :cols] = a
    if scaling == "1x128":
        return padded[:rows].view(rows, g, 128).amax(dim=-1)
    return padded.view(-1, 128, g, 128).amax(dim=(1, 3))


def _per_element(groups, scaling, rows, cols):
    """A value per group (in the scales' shape) spread over the group's elements."""
    if scaling in ("tensor", "row"):
        return groups.expand(rows, cols)
    spread = groups.repeat_interleave(128, dim=1)[:, :cols]
    return spread if scaling == "1x128" else spread.repeat_interleave(128, dim=0)[:rows]


@pytest.mark.parametrize("scaling", ["tensor", "row", "1x128", "128x128"])
@pytest.mark.parametrize("fp8", [torch.float8_e4m3fn, torch.float8_e5m2])
# 1000: a partial last group; 1001: rows not in whole 16-byte vectors (element loads); 1024:
# aligned; 40000: a row longer than one chunk of the row kernel (read twice).
@pytest.mark.parametrize("cols", [1000, 1001, 1024, 40000])
@pytest.mark.parametrize("dtype", [BF16, torch.float16, torch.float32])
def test_quantize_fp8_matches_torch(scaling, fp8, cols, dtype):
    x = rand(300, cols, dtype=dtype) * 3
    x[5] = 0  # a zero row keeps scale 1 (row, 1x128)
    q, scale = torch.ops.gemmforge.quantize_fp8(x, scaling, fp8)
    amax = _group_amax(x, scaling)
    fmax = torch.finfo(fp8).max
    want_scale = torch.where(amax > 0, amax / fmax, torch.ones_like(amax))
    assert scale.shape == want_scale.shape
    close(scale, want_scale, tol=1e-6)
    # From the kernel's scales (torch's amax / fmax may be an ulp off them: it multiplies by the
    # reciprocal), x times the scale's reciprocal as the kernel (and torchao) computes it: bf16
    # ratios land on fp8 rounding ties often, so an ulp flips 0.2-0.8% of the elements (H200).
    elem_scale = _per_element(scale, scaling, *x.shape)
    want_q = (x.float() * (1 / elem_scale)).clamp(-fmax, fmax).to(fp8)
    assert (q.float() == want_q.float()).all()
    # close() bounds the largest error by amax: values near amax (the type's largest, 1.75 * 2^e)
    # round to half a step of 2^(e - mantissa bits), so the bound is 2^-(m+1) / 1.75: 0.0714 for
    # e5m2 (measured 0.0707 on the H200), 0.0357 for e4m3.
    close(q.float() * elem_scale, x, tol=0.075 if fp8 == torch.float8_e5m2 else 0.04)


# A static scale: the cast alone, as the dynamic op casts with the scale it found; a smaller
# scale saturates, never overflows to NaN.
@pytest.mark.parametrize("fp8", [torch.float8_e4m3fn, torch.float8_e5m2])
@pytest.mark.parametrize("cols", [1001, 4096])
def test_quantize_fp8_static_matches_the_dynamic_cast(fp8, cols):
    x = rand(300, cols) * 3
    q, scale = torch.ops.gemmforge.quantize_fp8(x, "tensor", fp8)
    assert torch.equal(torch.ops.gemmforge.quantize_fp8_static(x, scale, fp8).float(), q.float())
    fmax = torch.finfo(fp8).max
    small = torch.ops.gemmforge.quantize_fp8_static(x, scale / 4, fp8).float()
    assert torch.isfinite(small).all() and small.abs().max().item() == fmax
    want = (x.float() * (1 / (scale / 4))).clamp(-fmax, fmax).to(fp8).float()
    assert torch.equal(small, want)


# Delayed scaling: the static cast by the scale given, and x's amax from the same pass (exact: a
# max of the inputs), whose scale the dynamic op would have used; an empty x has amax 0.
@pytest.mark.parametrize("fp8", [torch.float8_e4m3fn, torch.float8_e5m2])
@pytest.mark.parametrize("shape", [(300, 1001), (1000, 4096), (3, 7)])
def test_quantize_fp8_delayed_casts_by_the_given_scale_and_finds_the_amax(fp8, shape):
    x = rand(*shape) * 3
    x[shape[0] // 2, shape[1] - 1] = -100.0  # the amax, negative, in the last vector of a row
    earlier = torch.tensor(0.02, device="cuda")
    q, amax = torch.ops.gemmforge.quantize_fp8_delayed(x, earlier, fp8)
    assert torch.equal(q.float(), torch.ops.gemmforge.quantize_fp8_static(x, earlier, fp8).float())
    assert amax.item() == x.float().abs().max().item() == 100.0
    _, dynamic = torch.ops.gemmforge.quantize_fp8(x, "tensor", fp8)
    # The dynamic op divides approximately (within an ulp: 100 / 448 came out 1 ulp off on an H100).
    torch.testing.assert_close(amax / torch.finfo(fp8).max, dynamic, rtol=2.5e-7, atol=0)
    q0, amax0 = torch.ops.gemmforge.quantize_fp8_delayed(x[:0], earlier, fp8)
    assert q0.shape == (0, shape[1]) and amax0.item() == 0.0


# x (activations) and w (a weight) quantized, then multiplied by scaled_mm, against the bf16
# product: rowwise scales; gradients in e5m2 by weights in e4m3 (a backward pass's dX); and
# DeepSeek-V3's recipe, activations in 1x128 groups and the weight in 128x128 blocks at K = 4096,
# where a kernel that does not promote its partial sums drifts past the bound.
@pytest.mark.parametrize("m,n,k,x_scaling,x_dtype,w_scaling,tol", [
    (128, 256, 512, "row", torch.float8_e4m3fn, "row", 0.05),
    (128, 256, 512, "row", torch.float8_e5m2, "row", 0.1),
    (256, 384, 4096, "1x128", torch.float8_e4m3fn, "128x128", 0.05),
], ids=["rowwise", "mixed_e5m2_e4m3", "block"])
def test_quantized_linear_end_to_end(m, n, k, x_scaling, x_dtype, w_scaling, tol):
    x, w = rand(m, k), rand(n, k)
    qx, sx = torch.ops.gemmforge.quantize_fp8(x, x_scaling, x_dtype)
    qw, sw = torch.ops.gemmforge.quantize_fp8(w, w_scaling)
    y = torch.ops.gemmforge.scaled_mm(qx, qw.t(), sx, sw.t(), None, BF16)
    close(y, x.float() @ w.float().t(), tol=tol)


def test_scaled_mm_fp8_output():
    # torch._scaled_mm's contract: an e4m3 result of saturate(scale_result * (scale_a * scale_b * a @ b)).
    x, w = rand(200, 512), rand(256, 512)
    qx, sx = torch.ops.gemmforge.quantize_fp8(x, "tensor")
    qw, sw = torch.ops.gemmforge.quantize_fp8(w, "tensor")
    want = x.float() @ w.float().t()
    scale_result = (224.0 / want.abs().amax()).reshape(())
    y = torch.ops.gemmforge.scaled_mm(qx, qw.t(), sx, sw, None, torch.float8_e4m3fn, scale_result)
    assert y.dtype == torch.float8_e4m3fn
    close(y.float() / scale_result, want, tol=0.08)
    with pytest.raises(gemmforge.Error, match="scale_result"):
        torch.ops.gemmforge.scaled_mm(qx, qw.t(), sx, sw, None, torch.float8_e4m3fn)


def test_scaled_mm_bad_scales_are_one_line_errors():
    x, w = rand(200, 512), rand(256, 512)
    qx, sx = torch.ops.gemmforge.quantize_fp8(x, "row")
    qw, sw = torch.ops.gemmforge.quantize_fp8(w, "row")
    cases = [((sx.to(BF16), sw.t()), "float32"),                  # the wrong dtype
             ((sx[:100], sw.t()), "neither per tensor, rowwise"),  # rows of another shape
             ((sx, sw.t()[:, :5]), "neither per tensor, rowwise"),
             ((sx.cpu(), sw.t()), "cpu")]
    for (scale_a, scale_b), match in cases:
        with pytest.raises(gemmforge.Error, match=match) as err:
            torch.ops.gemmforge.scaled_mm(qx, qw.t(), scale_a, scale_b, None, BF16)
        assert "\n" not in str(err.value)
    with pytest.raises(gemmforge.Error, match="fp8"):  # bf16 inputs
        torch.ops.gemmforge.scaled_mm(x, w.t(), sx, sw.t(), None, BF16)
    with pytest.raises(gemmforge.Error, match="one float32"):
        torch.ops.gemmforge.quantize_fp8_static(x, sx)
    with pytest.raises(gemmforge.Error, match="one float32"):
        torch.ops.gemmforge.quantize_fp8_delayed(x, sx)
