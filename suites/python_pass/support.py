"""Shared helpers of the Python-pass tests (suites/python_pass): running passcheck, the
environment its Python worker needs, and bit-for-bit comparison of tensors."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.dirname(os.path.dirname(HERE))
EXAMPLES = os.path.join(SOURCE_DIR, "python", "passcheck_fx", "examples")
# The Python passes run in this interpreter (the one with the build's torch), not whatever
# python3 is first on PATH.
os.environ.setdefault("PASSCHECK_PYTHON", sys.executable)
sys.path.insert(0, os.path.join(SOURCE_DIR, "suites", "support"))
import scratch_root  # noqa: E402,F401  (temporary directories under a root removed at exit)


def passcheck_binary():
    if len(sys.argv) > 1:
        return sys.argv[1]
    return os.environ.get("PASSCHECK_BINARY", os.path.join(SOURCE_DIR, "build", "bin", "passcheck"))


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


def expect_one_replaying_repro(workdir, out, pipeline, failure_words, minimize_seconds):
    """The campaign in `workdir` wrote exactly one repro, naming `pipeline` and the python
    registry and holding each of `failure_words`; it replays with exit 1, minimizes, and
    the minimized repro still fails. Returns the repro's text."""
    import glob
    repros = glob.glob(os.path.join(workdir, "*.repro"))
    assert len(repros) == 1, (repros, out)
    text = open(repros[0]).read()
    assert "#! pipeline: " + pipeline in text, text[:600]
    assert "#! registries: python" in text, text[:600]
    for words in failure_words:
        assert words in text, (words, text[:1500])
    code, replay = run(["repro", "--allow-python", repros[0]], expect=1)
    assert "verdict: FAILS" in replay, replay
    minimized = os.path.join(workdir, "min.repro")
    run(["minimize", "--allow-python", repros[0], "--out", minimized, "--seconds", str(minimize_seconds)], expect=0)
    run(["repro", "--allow-python", minimized], expect=1)
    print(out.strip().splitlines()[-1])
    print("replayed and minimized: " + os.path.basename(repros[0]))
    return text
