"""What a PyTorch user sees of functorch's min-cut recomputing from a mutated buffer
(suites/python_pass/upstream_bugs/min-cut-recomputes-from-mutated-buffer.repro): plain
PyTorch, CPU, no passcheck.

A module reads its buffer (`add = x + running_mean`) and then updates the buffer in place,
as batch norm's running statistics are updated. Under torch.compile with AOTAutograd and
min_cut_rematerialization_partition, the partitioner chooses to recompute `add` in the
backward and saves the buffer (a graph input, "free" to save) instead of `add`. AOTAutograd
applies the buffer update after the forward, so the backward would read the updated
buffer: autograd's version check stops it with "one of the variables needed for gradient
computation has been modified by an inplace operation". default_partition saves `add` and
trains like eager.

Exit 0 when the bug shows (min-cut raises, default_partition matches eager bit for bit),
1 when it no longer does (then move the repro to suites/regressions), 2 on anything else.
"""
import sys

import torch
from functorch.compile import default_partition, make_boxed_func, min_cut_rematerialization_partition
from torch._dynamo.backends.common import aot_autograd


class BufferUpdate(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w1 = torch.nn.Parameter(torch.randn(6))
        self.w2 = torch.nn.Parameter(torch.randn(6))
        self.register_buffer("running_mean", torch.randn(6))

    def forward(self, x):
        add = x + self.running_mean
        self.running_mean.mul_(0.9).add_(x.detach().mean(0) * 0.1)
        return (torch.tanh(add * self.w1) * self.w2).mean()


def train_step(partition):
    """Gradients of one compiled step, or the error its backward raised."""
    torch.manual_seed(0)
    eager, compiled = BufferUpdate(), BufferUpdate()
    compiled.load_state_dict(eager.state_dict())
    x = torch.randn(2, 6)
    eager(x).backward()
    torch._dynamo.reset()
    def compiler(gm, _):
        return make_boxed_func(gm.forward)
    backend = aot_autograd(fw_compiler=compiler, bw_compiler=compiler, partition_fn=partition)
    try:
        torch.compile(compiled, backend=backend, fullgraph=True)(x).backward()
    except RuntimeError as error:
        return None, str(error).splitlines()[0]
    same = all(torch.equal(getattr(eager, n).grad, getattr(compiled, n).grad) for n in ("w1", "w2"))
    return same, None


def main():
    same, error = train_step(min_cut_rematerialization_partition)
    print("min_cut_rematerialization_partition:", error or ("gradients equal to eager" if same else "gradients differ"))
    default_same, default_error = train_step(default_partition)
    print("default_partition:", default_error or ("gradients equal to eager" if default_same else "gradients differ"))
    if default_error or not default_same:
        return 2
    if error and "modified by an inplace operation" in error:
        return 0
    if same is False:
        return 0  # silent wrong gradients: the same bug without the version check
    return 1


if __name__ == "__main__":
    sys.exit(main())
