"""Shared helpers of the Python-pass tests (suites/python_pass): running passcheck, the
environment its Python worker needs, and bit-for-bit comparison of tensors."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.dirname(os.path.dirname(HERE))
EXAMPLES = os.path.join(SOURCE_DIR, "python", "passcheck_fx", "examples")


def passcheck_binary():
    if len(sys.argv) > 1:
        return sys.argv[1]
    return os.environ.get("PASSCHECK_BINARY", os.path.join(SOURCE_DIR, "build", "framework", "passcheck"))


def worker_env():
    """The environment for passcheck runs whose worker exports results."""
    return dict(os.environ)


def run(args, expect=None, env=None):
    """Runs passcheck; returns (exit code, stdout + stderr). Fails when `expect` differs."""
    proc = subprocess.run([passcheck_binary()] + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          env=env or worker_env(), universal_newlines=True)
    if expect is not None and proc.returncode != expect:
        raise AssertionError("passcheck %s: exit %d, expected %d\n%s"
                             % (" ".join(args), proc.returncode, expect, proc.stdout))
    return proc.returncode, proc.stdout


def bits(t):
    """The tensor's bytes in logical order (so NaNs and signed zeros compare exactly)."""
    import torch
    flat = t.detach().contiguous().reshape(-1)
    return flat.view(torch.uint8) if flat.numel() else flat


def bitwise_equal(a, b):
    import torch
    if isinstance(a, torch.Tensor) != isinstance(b, torch.Tensor):
        return False, "one is a tensor, the other %r" % (b,)
    if not isinstance(a, torch.Tensor):
        return a == b, "%r vs %r" % (a, b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False, "%s%s vs %s%s" % (a.dtype, list(a.shape), b.dtype, list(b.shape))
    if not torch.equal(bits(a), bits(b)):
        return False, "values differ"
    return True, ""
