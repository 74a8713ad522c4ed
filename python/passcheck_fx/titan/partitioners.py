"""PyTorch's own partitioners on torchtitan's joint graphs, and passcheck's of the same
intent on the same graphs.

functorch's `min_cut_rematerialization_partition` (plain, and after graph_trainer's SAC
tagging: it honours the `recompute` tags) and `default_partition` split the traced step
into a forward and a backward graph; passcheck_fx.partition brings the step into
AOTAutograd's joint form (the loss's ones_like seed becomes the tangent) and exports the
result as a passcheck module. passcheck's `partition-min-cut` does the same from the
exported joint. Each module must compute the joint's outputs bit for bit
(`passcheck equiv joint module`); the decisions compared are what each saves for the
backward (values and bytes) and how many nodes the backward recomputes.
"""

import copy
import os
import re
import time

import torch

from .. import partition as fx_partition
from . import models, sac, tools

PARTITIONERS = ("min_cut", "default")


def _passcheck_form(step, gm):
    """The step graph, its private in-place temporaries functionalized, with the metadata
    the joint conversion and the partitioners read:
    backward phase (passcheck's and AOTAutograd's `partitioner_tag`) for the autograd
    engine's nodes and the loss's gradient seed, input kinds."""
    gm = copy.deepcopy(gm)
    fx_partition.functionalize_private_temporaries(gm)
    kinds = step.kinds()
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            node.meta["passcheck_kind"] = kinds[node.name]
        elif node.meta.get("autograd_backward"):
            _mark_backward(node)
    for node in gm.graph.nodes:
        if (node.op == "call_function" and getattr(node.target, "overloadpacket", None) is torch.ops.aten.ones_like
                and node.users and all(u.meta.get("autograd_backward") for u in node.users)):
            _mark_backward(node)
    return gm


def _mark_backward(node):
    # passcheck's phase for the joint conversion, and AOTAutograd's tag the partitioners
    # read: without it an in-place op of the backward "must be in the forward" to them.
    node.meta.setdefault("passcheck", {})["phase"] = "backward"
    node.meta["partitioner_tag"] = "is_backward"


def _functorch(name):
    from torch._functorch import partitioners
    return {"min_cut": partitioners.min_cut_rematerialization_partition,
            "default": partitioners.default_partition}[name]


_VIEW_OPS = {"aten::t", "aten::view", "aten::transpose.int", "aten::alias", "aten::permute", "aten::expand",
             "aten::unsqueeze", "aten::squeeze.dim", "aten::slice.Tensor", "aten::select.int", "aten::_reshape_alias",
             "aten::as_strided", "aten::view_as_real", "aten::view_as_complex", "aten::_conj", "aten::reshape"}
_NODE = re.compile(r"^\s*(%.*?) = ([\w:.]+)\((%(\w+))?")
_GRAPH_INPUT = re.compile(r"^\s*(?:param|buffer|arg)\s+%(\w+)\s*:\s*(\w+)\[([0-9, ]*)\]")


def saved_values(module_text):
    """What the forward part hands the backward: (values, bytes, bytes of activations).
    The values are the backward part's inputs whose `from (...)` source is a forward
    output; bytes are their sizes from their types; activation bytes leave out the values
    that are views of the module's inputs (a transposed weight costs no memory)."""
    lines = module_text.splitlines()
    aliases_of_inputs = set()
    for line in lines:
        m = _GRAPH_INPUT.match(line)
        if m:
            aliases_of_inputs.add(m.group(1))
            continue
        if line.startswith("part backward"):
            break
        m = _NODE.match(line)
        if m and m.group(2) in _VIEW_OPS and m.group(4) in aliases_of_inputs:
            aliases_of_inputs.update(re.findall(r"%(\w+)\s*:", m.group(1)))
    for i, line in enumerate(lines):
        m = re.match(r"^\s*part \w+ from \((.*)\)", line)
        if not m:
            continue
        sources = [x.strip() for x in m.group(1).split(",")]
        inputs = []
        for graph_line in lines[i + 2:]:
            t = _GRAPH_INPUT.match(graph_line)
            if not t:
                break
            elements = 1
            for d in filter(None, (x.strip() for x in t.group(3).split(","))):
                elements *= int(d)
            inputs.append((t.group(1), elements * _DTYPE_BYTES.get(t.group(2), 4)))
        linked = [(name, size) for source, (name, size) in zip(sources, inputs) if source != "-"]
        return (len(linked), sum(size for _, size in linked),
                sum(size for name, size in linked if name not in aliases_of_inputs))
    return 0, 0, 0


_DTYPE_BYTES = {"f32": 4, "f64": 8, "f16": 2, "bf16": 2, "i64": 8, "i32": 4, "i16": 2, "i8": 1, "u8": 1, "b8": 1}


def verify_partitioners(model="llama3", passcheck=None, workdir=None, step=None):
    """Every partitioner above on one model's step; returns a dict per partitioner."""
    passcheck = tools.find_passcheck(passcheck)
    work = tools.workdir(workdir)
    step = step or models.trace_step(model)
    inputs = tools.save(os.path.join(work, "inputs.pt"), step.flat_inputs())
    joint = tools.export(step.gm, os.path.join(work, "joint.graph"), step.kinds())
    results, failures = {}, []
    cases = [("torch min_cut", "min_cut", None), ("torch min_cut + graph_trainer SAC default", "min_cut", "default"),
             ("torch default_partition", "default", None)]
    for label, name, policy in cases:
        started = time.time()
        gm = step.gm
        if policy:
            gm, _ = sac.tag_and_remat(step.gm, policy)  # the tagged graph; min-cut does the remat
        try:
            module = fx_partition.partition_passcheck_joint(_passcheck_form(step, gm), _functorch(name))
        except Exception as error:  # a partitioner that cannot handle the graph is a finding
            results[label] = {"error": f"{type(error).__name__}: {error}"[:300]}
            failures.append(f"{label}: raised {type(error).__name__}")
            continue
        path = os.path.join(work, re.sub(r"\W+", "-", label) + ".module")
        with open(path, "w") as f:
            f.write(module.text)
        results[label] = _check_module(passcheck, joint, path, inputs, failures, label, started)
    for label, pipeline in (("passcheck partition-min-cut", "partition-min-cut"),):
        started = time.time()
        path = os.path.join(work, pipeline + ".module")
        tools.call(passcheck, ["opt", joint, "--pipeline", pipeline, "-o", path])
        results[label] = _check_module(passcheck, joint, path, inputs, failures, label, started)
    return {"model": model, "partitioners": results, "failures": failures, "workdir": work}


def _check_module(passcheck, joint, path, inputs, failures, label, started):
    equal, report = tools.equiv(passcheck, joint, path, inputs)
    if not equal:
        failures.append(f"{label}: the partitioned module computes other bits: " + " | ".join(report))
    text = open(path).read()
    count, nbytes, activation_bytes = saved_values(text)
    backward = text[text.find("part backward"):] if "part backward" in text else ""
    return {"bitwise_equal": equal, "saved_values": count, "saved_bytes": nbytes, "saved_activation_bytes": activation_bytes,
            "backward_nodes": backward.count(" = "), "seconds": round(time.time() - started, 1)}
