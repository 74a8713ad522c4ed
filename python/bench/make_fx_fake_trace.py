"""PyTorch's own tracer on the production shapes, for `passcheck bench --production`.

Builds the llama3 training step passcheck's oracles/models/llama3.cpp builds (token
embedding; blocks of RMSNorm -> causal grouped-query self-attention with a fused wqkv
projection and rotary embedding over interleaved pairs -> RMSNorm -> SwiGLU; final norm,
output projection, cross entropy; loss and every parameter's gradient) at the production
configurations of oracles/models/configs.cpp, with every tensor a FakeTensor (created
under FakeTensorMode: shapes only, no storage, no compute), and traces it with
make_fx(tracing_mode="fake") (the project venv's torch). Prints one JSON line: the
configuration, FX node counts, the time to build the model and to trace, and the peak
RSS of the process.

  .venv/bin/python python/bench/make_fx_fake_trace.py --config 8b [--layers N] [--seq S]
"""
import argparse
import json
import math
import os
import resource
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.proxy_tensor import make_fx



class RMSNorm(nn.Module):
    """F.rms_norm, as torchtitan's llama3 and passcheck's C++ model call it."""

    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return F.rms_norm(x, (x.shape[-1],), self.weight, self.eps)

# dim, layers, heads, kv heads, ffn_dim_multiplier, multiple_of (torchtitan's llama3 args)
LLAMA3 = {
    "8b": (4096, 32, 32, 8, 1.3, 1024),
    "70b": (8192, 80, 64, 8, 1.3, 4096),
    "405b": (16384, 126, 128, 8, 1.2, 4096),
}
VOCAB = 128256
SEQ = 8192


def ffn_hidden(dim, multiplier, multiple_of):
    hidden = int(multiplier * int(2 * (4 * dim) / 3))
    return multiple_of * ((hidden + multiple_of - 1) // multiple_of)


def rotate_interleaved(x, cos, sin):
    b, s, h, d = x.shape
    pairs = x.reshape(b, s, h, d // 2, 2)
    x0, x1 = pairs.select(-1, 0), pairs.select(-1, 1)
    c, sn = cos.view(1, s, 1, d // 2), sin.view(1, s, 1, d // 2)
    return torch.stack([x0 * c - x1 * sn, x0 * sn + x1 * c], -1).flatten(3)


class Attention(nn.Module):
    def __init__(self, dim, n_heads, n_kv_heads):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_dim = n_heads, n_kv_heads, dim // n_heads
        self.wqkv = nn.Linear(dim, (n_heads + 2 * n_kv_heads) * self.head_dim, bias=False)
        self.wo = nn.Linear(dim, dim, bias=False)

    def forward(self, x, cos, sin):
        b, s, dim = x.shape
        kv_dim = self.n_kv_heads * self.head_dim
        q, k, v = self.wqkv(x).split([dim, kv_dim, kv_dim], dim=-1)
        q = rotate_interleaved(q.view(b, s, self.n_heads, self.head_dim), cos, sin).transpose(1, 2)
        k = rotate_interleaved(k.view(b, s, self.n_kv_heads, self.head_dim), cos, sin)
        v = v.view(b, s, self.n_kv_heads, self.head_dim)
        rep = self.n_heads // self.n_kv_heads
        k = k[:, :, :, None, :].expand(b, s, self.n_kv_heads, rep, self.head_dim).reshape(b, s, self.n_heads, self.head_dim)
        v = v[:, :, :, None, :].expand(b, s, self.n_kv_heads, rep, self.head_dim).reshape(b, s, self.n_heads, self.head_dim)
        k, v = k.transpose(1, 2), v.transpose(1, 2)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.wo(out.transpose(1, 2).reshape(b, s, dim))


class FeedForward(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Block(nn.Module):
    def __init__(self, dim, n_heads, n_kv_heads, hidden):
        super().__init__()
        self.attention = Attention(dim, n_heads, n_kv_heads)
        self.feed_forward = FeedForward(dim, hidden)
        self.attention_norm = RMSNorm(dim)
        self.ffn_norm = RMSNorm(dim)

    def forward(self, x, cos, sin):
        h = x + self.attention(self.attention_norm(x), cos, sin)
        return h + self.feed_forward(self.ffn_norm(h))


class Llama3(nn.Module):
    def __init__(self, dim, n_layers, n_heads, n_kv_heads, hidden, max_seq, theta=500000.0):
        super().__init__()
        self.tok_embeddings = nn.Embedding(VOCAB, dim)
        self.layers = nn.ModuleList([Block(dim, n_heads, n_kv_heads, hidden) for _ in range(n_layers)])
        self.norm = RMSNorm(dim)
        self.output = nn.Linear(dim, VOCAB, bias=False)
        head_dim = dim // n_heads
        inv_freq = theta ** (-torch.arange(0, head_dim // 2, dtype=torch.float64) * 2.0 / head_dim)
        angles = torch.outer(torch.arange(max_seq, dtype=torch.float64), inv_freq)
        self.register_buffer("freqs_cos", angles.cos().float())
        self.register_buffer("freqs_sin", angles.sin().float())

    def forward(self, tokens):
        s = tokens.shape[1]
        cos, sin = self.freqs_cos.narrow(0, 0, s), self.freqs_sin.narrow(0, 0, s)
        h = self.tok_embeddings(tokens)
        for layer in self.layers:
            h = layer(h, cos, sin)
        return self.output(self.norm(h))


def peak_rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", choices=sorted(LLAMA3), required=True)
    parser.add_argument("--layers", type=int, default=0, help="blocks (0: the configuration's)")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--seq", type=int, default=SEQ)
    args = parser.parse_args()
    dim, layers, heads, kv_heads, multiplier, multiple_of = LLAMA3[args.config]
    layers = args.layers or layers
    rss_before = peak_rss_mib()

    fake = FakeTensorMode()
    t0 = time.perf_counter()
    with fake:
        model = Llama3(dim, layers, heads, kv_heads, ffn_hidden(dim, multiplier, multiple_of), args.seq)
        tokens = torch.zeros(args.batch, args.seq, dtype=torch.long)
        labels = torch.zeros(args.batch, args.seq, dtype=torch.long)
    build_s = time.perf_counter() - t0
    params = dict(model.named_parameters())
    buffers = dict(model.named_buffers())
    names = list(params) + list(buffers)
    n_params = len(params)

    def step(*state_and_batch):
        state = dict(zip(names, state_and_batch[:len(names)]))
        tokens, labels = state_and_batch[len(names):]
        logits = torch.nn.utils.stateless.functional_call(model, state, (tokens,))
        loss = F.cross_entropy(logits.flatten(0, 1), labels.flatten(0, 1))
        return [loss, *torch.autograd.grad(loss, state_and_batch[:n_params])]

    inputs = [p.detach().requires_grad_(True) for p in params.values()] + list(buffers.values()) + [tokens, labels]
    t0 = time.perf_counter()
    gm = make_fx(step, tracing_mode="fake")(*inputs)
    trace_s = time.perf_counter() - t0
    nodes = list(gm.graph.nodes)
    print(json.dumps({
        "model": "llama3", "config": args.config, "layers": layers, "batch": args.batch, "seq": args.seq,
        "parameters": sum(p.numel() for p in params.values()),
        "fx_nodes": len(nodes), "fx_ops": sum(1 for n in nodes if n.op == "call_function"),
        "build_ms": build_s * 1e3, "trace_ms": trace_s * 1e3,
        "peak_rss_mib": peak_rss_mib(), "rss_before_mib": rss_before, "torch": torch.__version__,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
