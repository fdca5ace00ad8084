"""A Llama-shaped decoder layer in plain PyTorch (Hugging Face's module names), for the demo and
the benchmark: RMSNorm, qkv, SDPA with GQA, o + residual, RMSNorm, gate/up, SwiGLU, down + residual."""
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass
class Config:
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    eps: float = 1e-5


def llama3_8b_config() -> Config:
    return Config(hidden=4096, heads=32, kv_heads=8, head_dim=128, intermediate=14336)


def small_config() -> Config:
    return Config(hidden=512, heads=8, kv_heads=2, head_dim=64, intermediate=1408)


class RMSNorm(nn.Module):
    def __init__(self, hidden: int, eps: float):
        super().__init__()
        self.weight, self.variance_epsilon = nn.Parameter(torch.ones(hidden)), eps

    def forward(self, x):
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.variance_epsilon)
        return self.weight * h.to(x.dtype)


class Attention(nn.Module):
    def __init__(self, c: Config):
        super().__init__()
        self.c = c
        self.qkv_proj = nn.Linear(c.hidden, (c.heads + 2 * c.kv_heads) * c.head_dim, bias=False)
        self.o_proj = nn.Linear(c.heads * c.head_dim, c.hidden, bias=False)

    def forward(self, x):
        b, s, _ = x.shape
        c = self.c
        q, k, v = self.qkv_proj(x).split([c.heads * c.head_dim, c.kv_heads * c.head_dim, c.kv_heads * c.head_dim], -1)
        q = q.view(b, s, c.heads, c.head_dim).transpose(1, 2)
        k = k.view(b, s, c.kv_heads, c.head_dim).transpose(1, 2)
        v = v.view(b, s, c.kv_heads, c.head_dim).transpose(1, 2)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        return self.o_proj(o.transpose(1, 2).reshape(b, s, c.heads * c.head_dim))


class MLP(nn.Module):
    def __init__(self, c: Config):
        super().__init__()
        self.gate_proj = nn.Linear(c.hidden, c.intermediate, bias=False)
        self.up_proj = nn.Linear(c.hidden, c.intermediate, bias=False)
        self.down_proj = nn.Linear(c.intermediate, c.hidden, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, c: Config):
        super().__init__()
        self.hidden = c.hidden
        self.input_layernorm, self.post_attention_layernorm = RMSNorm(c.hidden, c.eps), RMSNorm(c.hidden, c.eps)
        self.self_attn, self.mlp = Attention(c), MLP(c)
        for p in self.parameters():  # random weights of a trained model's scale
            if p.dim() == 2:
                nn.init.normal_(p, std=p.shape[1] ** -0.5)

    def forward(self, x):
        h = x + self.self_attn(self.input_layernorm(x))
        return h + self.mlp(self.post_attention_layernorm(h))
