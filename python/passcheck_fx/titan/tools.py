"""Running the passcheck binary on exported torchtitan graphs: where it is, the work
directory, exporting a GraphModule with its inputs, and reading `run`'s figures."""

import os
import re
import shutil
import subprocess
import tempfile

import torch

from .. import exporter, save_inputs

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))


def find_passcheck(passcheck=None):
    """The passcheck binary: the argument, $PASSCHECK_BINARY, the build tree's, or PATH's."""
    for candidate in (passcheck, os.environ.get("PASSCHECK_BINARY"),
                      os.path.join(SOURCE_DIR, "build", "bin", "passcheck"), shutil.which("passcheck")):
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    raise FileNotFoundError("no passcheck binary: pass passcheck=PATH, set PASSCHECK_BINARY, or build it "
                            "(ci/passcheck.sh)")


def workdir(path=None, prefix="passcheck-titan-"):
    if path:
        os.makedirs(path, exist_ok=True)
        return path
    return tempfile.mkdtemp(prefix=prefix)


def threads():
    """Python's intra-op thread count: passcheck runs with it so reductions split alike."""
    return torch.get_num_threads()


def export(gm, path, kinds, example_inputs=None):
    text = exporter.export_graph(gm, kinds=kinds, example_inputs=example_inputs)
    with open(path, "w") as f:
        f.write(text)
    return path


def save(path, tensors):
    return save_inputs(path, tensors)


class PasscheckError(RuntimeError):
    pass


def run(passcheck, args, timeout=600):
    """Runs passcheck: (exit code, stdout + stderr)."""
    proc = subprocess.run([passcheck] + [str(a) for a in args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=timeout)
    return proc.returncode, proc.stdout


def call(passcheck, args, expect=(0,)):
    """Runs passcheck; returns (exit code, output). An exit code outside `expect` raises
    with the command and its output."""
    code, text = run(passcheck, args)
    if code not in expect:
        raise PasscheckError("passcheck %s: exit %d\n%s" % (" ".join(map(str, args)), code, text[-4000:]))
    return code, text


_RUN_PEAK = re.compile(r"peak live bytes (\d+) \(inputs (\d+)\)")
_RUN_ESTIMATE = re.compile(r"estimated peak bytes (\d+); held from forward into backward (\d+) "
                           r"\(of which recomputable (\d+)\)")


def run_figures(passcheck, graph, inputs, outputs=None):
    """`passcheck run GRAPH --inputs IN`: measured peak above the inputs, the static
    estimate's peak, and the bytes held from the forward into the backward."""
    args = ["run", graph, "--inputs", inputs, "--threads", threads()]
    if outputs:
        args += ["--save-outputs", outputs]
    _, text = call(passcheck, args)
    peak, estimate = _RUN_PEAK.search(text), _RUN_ESTIMATE.search(text)
    if not peak or not estimate:
        raise PasscheckError("passcheck run printed no memory figures:\n" + text[-2000:])
    return {"measured_peak_bytes": int(peak.group(1)) - int(peak.group(2)),
            "estimated_peak_bytes": int(estimate.group(1)),
            "held_forward_to_backward_bytes": int(estimate.group(2))}


def equiv(passcheck, a, b, inputs):
    """`passcheck equiv A B --inputs IN`: True when every output (and input after the
    run) is bit for bit equal; the report's first lines otherwise."""
    code, text = call(passcheck, ["equiv", a, b, "--inputs", inputs, "--threads", threads()], expect=(0, 1))
    return code == 0, text.strip().splitlines()[-6:] if code else []


_NODE_LINE = re.compile(r"^\s*%([A-Za-z0-9_.]+)\s*:.*?#\{(.*)\}\s*$")
_RECOMPUTE = re.compile(r"\brecompute=([a-z_]+)")


def recompute_tags(text):
    """{node name: recompute tag} of a passcheck graph text (nodes without a tag left out)."""
    tags = {}
    for line in text.splitlines():
        m = _NODE_LINE.match(line)
        if not m:
            continue
        tag = _RECOMPUTE.search(m.group(2))
        if tag:
            tags[m.group(1)] = tag.group(1)
    return tags


def bitwise_equal(a, b):
    """Same dtype, shape and bytes (NaNs and signed zeros compare exactly); non-tensors by ==."""
    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
        return a == b
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    return torch.equal(a.detach().contiguous().reshape(-1).view(torch.uint8),
                       b.detach().contiguous().reshape(-1).view(torch.uint8))


def bitwise_equal_lists(a, b):
    """Indexes where two lists of tensors differ in bits (shape, dtype or any byte)."""
    if len(a) != len(b):
        return ["length %d vs %d" % (len(a), len(b))]
    return [i for i, (x, y) in enumerate(zip(a, b)) if not bitwise_equal(x, y)]
