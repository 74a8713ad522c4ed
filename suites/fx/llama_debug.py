"""A Python llama3-debug-shaped training step for the FX bridge tests.

Written like oracles/models/llama3.cpp at small sizes: token embedding, blocks of
RMSNorm -> causal self-attention (fused wqkv, rotary embedding over interleaved pairs)
-> RMSNorm -> SwiGLU feed-forward, final norm, output projection and cross entropy.
`make_case()` returns the training step (loss and every parameter's gradient) and its
inputs, for make_fx to trace and passcheck to run on the same values.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_interleaved(x, cos, sin):
    """Rotates each pair (x[2i], x[2i+1]) by the position's angle i (torchtitan's complex
    rotation written with real numbers)."""
    pairs = x.reshape(*x.shape[:-1], -1, 2)
    even, odd = pairs[..., 0], pairs[..., 1]
    rotated = torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1)
    return rotated.flatten(-2)


class Attention(nn.Module):
    def __init__(self, dim, n_heads):
        super().__init__()
        self.n_heads, self.head_dim = n_heads, dim // n_heads
        self.wqkv = nn.Linear(dim, 3 * dim, bias=False)
        self.wo = nn.Linear(dim, dim, bias=False)

    def forward(self, x, cos, sin):
        batch, seq, dim = x.shape
        q, k, v = self.wqkv(x).split(dim, dim=-1)
        q = q.view(batch, seq, self.n_heads, self.head_dim)
        k = k.view(batch, seq, self.n_heads, self.head_dim)
        v = v.view(batch, seq, self.n_heads, self.head_dim)
        q, k = rotate_interleaved(q, cos, sin), rotate_interleaved(k, cos, sin)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
        mask = torch.ones(seq, seq, dtype=torch.bool).triu(1)
        scores = scores.masked_fill(mask, float("-inf"))
        out = scores.softmax(-1) @ v
        return self.wo(out.transpose(1, 2).reshape(batch, seq, dim))


class FeedForward(nn.Module):
    def __init__(self, dim, hidden, gate="silu"):
        super().__init__()
        self.gate = gate
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        h = self.w1(x)
        # "sigmoid" spells silu out: make_fx (1.13) records silu's backward as its
        # composite formula while eager runs the fused kernel, whose bits differ.
        gated = F.silu(h) if self.gate == "silu" else h * torch.sigmoid(h)
        return self.w2(gated * self.w3(x))


class Block(nn.Module):
    def __init__(self, dim, n_heads, hidden, gate):
        super().__init__()
        self.attention_norm = RMSNorm(dim)
        self.attention = Attention(dim, n_heads)
        self.ffn_norm = RMSNorm(dim)
        self.feed_forward = FeedForward(dim, hidden, gate)

    def forward(self, x, cos, sin):
        h = x + self.attention(self.attention_norm(x), cos, sin)
        return h + self.feed_forward(self.ffn_norm(h))


class Llama(nn.Module):
    def __init__(self, vocab=128, dim=64, n_layers=2, n_heads=4, hidden=192, max_seq=16, theta=10000.0, gate="silu"):
        super().__init__()
        self.tok_embeddings = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList([Block(dim, n_heads, hidden, gate) for _ in range(n_layers)])
        self.norm = RMSNorm(dim)
        self.output = nn.Linear(dim, vocab, bias=False)
        head_dim = dim // n_heads
        freqs = 1.0 / theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
        angles = torch.outer(torch.arange(max_seq, dtype=torch.float32), freqs)  # [seq, head_dim / 2]
        self.register_buffer("freqs_cos", angles.cos()[:, None, :])  # broadcast over heads
        self.register_buffer("freqs_sin", angles.sin()[:, None, :])

    def forward(self, tokens):
        seq = tokens.shape[1]
        h = self.tok_embeddings(tokens)
        for layer in self.layers:
            h = layer(h, self.freqs_cos[:seq], self.freqs_sin[:seq])
        return self.output(self.norm(h))


def make_case(seed=0, batch=2, seq=16, vocab=128, gate="silu"):
    """(step, inputs, kinds): step(*params, *buffers, tokens, targets) returns
    [loss, *parameter gradients]; kinds maps make_fx's placeholder names to roles."""
    torch.manual_seed(seed)
    model = Llama(vocab=vocab, max_seq=seq, gate=gate)
    params = dict(model.named_parameters())
    buffers = dict(model.named_buffers())
    names = list(params) + list(buffers)
    n_params = len(params)
    generator = torch.Generator().manual_seed(seed + 1)
    tokens = torch.randint(0, vocab, (batch, seq), generator=generator)
    targets = torch.randint(0, vocab, (batch, seq), generator=generator)

    def step(*args):
        state = dict(zip(names, args[:len(names)]))
        tokens, targets = args[len(names):]
        logits = torch.nn.utils.stateless.functional_call(model, state, (tokens,))
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
        return [loss, *torch.autograd.grad(loss, args[:n_params])]

    inputs = [p.detach().clone().requires_grad_(True) for p in params.values()]
    inputs += [b.detach().clone() for b in buffers.values()] + [tokens, targets]
    roles = ["param"] * n_params + ["buffer"] * len(buffers) + ["arg", "arg"]
    kinds = {f"arg{i}_1": role for i, role in enumerate(roles)}  # make_fx's placeholder names
    return step, inputs, kinds
