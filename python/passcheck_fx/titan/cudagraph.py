"""graph_trainer's CUDA-graph analysis against passcheck's, on torchtitan's own graphs.

graph_trainer decides per node with `cudagraph.is_cudagraphable` which nodes its
cudagraph pass may capture, and keeps the first `TracedResult.num_static_inputs` inputs
(parameters and buffers) static (`construct_default_graph_passes`; its
`get_static_input_indices(gm, is_forward=False)` counts tangents, the saved activations
of a partitioned backward). passcheck's cudagraph pass decides with its capturability
predicate (`passcheck capturable`) and keeps the module state static.

The graphs are traced on the CPU, so both predicates are asked about a capture on a CUDA
device: passcheck moves the graph's types to `cuda` (nothing runs), and graph_trainer's
predicate is evaluated with its two device-dependent inputs fixed, as documented in
docs/verifying-a-python-pass.md: its "every tensor on the CPU" rule sees the tensors as on
the capture device, and `torch.cuda.get_device_capability()` answers `capability` (an
H100's (9, 0) by default), which its `_grouped_mm` rule reads.
"""

import contextlib
import os
import re
import time
from unittest import mock

from . import models, tools


@contextlib.contextmanager
def _as_on_cuda(capability):
    from torchtitan.experiments.graph_trainer import cudagraph
    with mock.patch.object(cudagraph, "_iter_tensors", lambda value: []), \
            mock.patch("torch.cuda.get_device_capability", lambda *a, **k: capability):
        yield cudagraph


def graph_trainer_decisions(step, capability=(9, 0)):
    """{node name: capturable} by graph_trainer's predicate, and its static input indexes."""
    from torch._inductor.utils import count_tangents
    with _as_on_cuda(capability) as cudagraph:
        decisions = {n.name: cudagraph.is_cudagraphable(n) for n in step.gm.graph.nodes if n.op == "call_function"}
    return decisions, {"pipeline": list(range(step.traced.num_static_inputs)),
                       "backward_rule": list(range(count_tangents(step.gm)))}


_REFUSED = re.compile(r"^not capturable %(\S+) (\S+): (\S+)$")


def passcheck_decisions(passcheck, graph):
    """{node name: guard} of the nodes passcheck refuses, and its static input indexes."""
    _, text = tools.call(passcheck, ["capturable", graph, "--device", "cuda"])
    refused, static = {}, []
    for line in text.splitlines():
        m = _REFUSED.match(line)
        if m:
            refused[m.group(1)] = (m.group(2), m.group(3))
        elif line.startswith("static inputs:"):
            static = [int(x) for x in line.split(":", 1)[1].split()]
    return refused, static


def compare(model="llama3", passcheck=None, workdir=None, capability=(9, 0), step=None):
    """Both analyses on one model's traced step; returns a dict of agreements and every
    node on which they differ (name, op, passcheck's guard)."""
    passcheck = tools.find_passcheck(passcheck)
    work = tools.workdir(workdir)
    started = time.time()
    step = step or models.trace_step(model)
    graph = tools.export(step.gm, os.path.join(work, f"{model}.graph"), step.kinds())
    theirs, their_static = graph_trainer_decisions(step, capability)
    refused, our_static = passcheck_decisions(passcheck, graph)
    ops = {n.name: str(n.target) for n in step.gm.graph.nodes}
    only_theirs = sorted(n for n, ok in theirs.items() if not ok and n not in refused)
    only_ours = sorted(n for n in refused if theirs.get(n, True))
    both = sorted(n for n in refused if n in theirs and not theirs[n])
    return {
        "model": model,
        "nodes": len(theirs),
        "refused_by_both": len(both),
        "refused_only_by_graph_trainer": [(n, ops.get(n)) for n in only_theirs],
        "refused_only_by_passcheck": [(n, refused[n][0], refused[n][1]) for n in only_ours],
        "guards_of_both": sorted({refused[n][1] for n in both}),
        "static_inputs_agree": their_static["pipeline"] == our_static,
        "static_inputs": {"graph_trainer": len(their_static["pipeline"]), "passcheck": len(our_static),
                          "graph_trainer_backward_rule": len(their_static["backward_rule"])},
        "seconds": round(time.time() - started, 1),
    }
