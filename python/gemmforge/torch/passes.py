"""A graph pass for torch.compile: a residual added to a gemmforge linear's output becomes the
linear's epilogue (D = x W^T + b + r in the GEMM's store, no separate add kernel).

    add(r, linear(x, w, b))  ->  linear(x, w, b, residual=r)

where the sum has the linear's shape and dtype (no broadcast) and nothing else reads the linear's
output. Runs after autograd, on Inductor's post-grad graph; optimize() installs it.
"""
from __future__ import annotations

import torch
import torch.fx as fx
from torch._inductor.custom_graph_pass import CustomGraphPass, get_hash_for_files

_LINEAR_ARGS = ("x", "weight", "bias", "residual", "epilogue")
_DEFAULTS = {"bias": None, "residual": None, "epilogue": ""}


def _linear_args(node: fx.Node) -> dict:
    args = dict(_DEFAULTS)
    args.update(zip(_LINEAR_ARGS, node.args))
    args.update(node.kwargs)
    return args


def _val(node) -> torch.Tensor | None:
    return node.meta.get("val") if isinstance(node, fx.Node) else None


def fuse_residual_adds(graph: fx.Graph) -> int:
    """Rewrites the graph in place; returns how many adds it folded."""
    linear, add = torch.ops.gemmforge.linear.default, torch.ops.aten.add.Tensor
    folded = 0
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target is not add or len(node.args) != 2 or node.kwargs:
            continue
        for mine, other in ((node.args[0], node.args[1]), (node.args[1], node.args[0])):
            if not (isinstance(mine, fx.Node) and mine.target is linear and len(mine.users) == 1):
                continue
            a = _linear_args(mine)
            out, res, total = _val(mine), _val(other), _val(node)
            if a["residual"] is not None or a["epilogue"] or out is None or res is None or total is None:
                continue
            if res.shape != out.shape or res.dtype != out.dtype or total.dtype != out.dtype:
                continue
            with graph.inserting_before(node):
                fused = graph.call_function(linear, (a["x"], a["weight"], a["bias"], other, ""))
            fused.meta.update(node.meta)
            node.replace_all_uses_with(fused)
            graph.erase_node(node)
            graph.erase_node(mine)
            folded += 1
            break
    return folded


class ResidualPass(CustomGraphPass):
    """fuse_residual_adds as Inductor's post-grad pass, with a cache key of this file's contents."""

    def __call__(self, graph: fx.Graph) -> None:
        fuse_residual_adds(graph)

    def uuid(self) -> bytes:
        return get_hash_for_files((__file__,))


def install() -> bool:
    """Sets the pass as Inductor's post-grad custom pass, unless one is set already (then it says
    False and leaves it)."""
    import torch._inductor.config as config

    current = config.post_grad_custom_post_pass
    if isinstance(current, ResidualPass):
        return True
    if current is not None:
        return False
    config.post_grad_custom_post_pass = ResidualPass()
    return True
