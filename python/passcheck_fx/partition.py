"""Running functorch's partitioners (min_cut_rematerialization_partition, default_partition)
on joint graphs and exporting their result as one passcheck module (docs/graph-format.md
"Modules").

The partitioners take a joint graph in AOTAutograd's form: placeholders named primals_i
and tangents_i (the tangents seed the backward), the outputs flattened as (forward
results..., backward results...) with `_out_spec` saying how many are forward results.
partition_joint runs one on such a joint (the fx suite's make_fx joints);
partition_passcheck_joint first brings a joint passcheck wrote (`passcheck export-python`,
`fuzz --python-pass`) into that form: a passcheck joint has no tangents (ones_like of the
loss, a backward node, starts the backward) and may interleave forward and backward
outputs. That seed becomes the tangent (in a graph without one, every backward node that
reads no backward value does);
the forward part computes it after the partitioner ran and hands it to the backward,
so the module takes the joint's inputs and returns the joint's outputs in the joint's
order. `partitioner` marks a pass function whose result is a module, so `fuzz
--python-pass` checks it as a module pass.
"""
import copy
import operator

import torch
import torch.fx

from .exporter import ExportError, export_partitioned, placeholder_kinds


def partitioner(function):
    """Marks a pass function that returns a module (a PartitionedModule), not a graph."""
    function.passcheck_partitioner = True
    return function


class PartitionedModule:
    """A partitioner's result as passcheck module text (what a partitioner pass returns)."""

    def __init__(self, text, forward, backward):
        self.text = text
        self.forward = forward
        self.backward = backward


def _out_spec(num_forward, num_backward):
    from torch.utils import _pytree as pytree
    return pytree.tree_flatten(((0,) * num_forward, (0,) * num_backward))[1]


def _outputs(gm):
    args = [n for n in gm.graph.nodes if n.op == "output"][0].args[0]
    return list(args) if isinstance(args, (list, tuple)) else [args]


def partition_joint(joint, partition, num_fwd_outputs, example_inputs=None):
    """(forward, backward) of `partition` run on a copy of `joint`, an AOTAutograd-form
    joint whose first num_fwd_outputs outputs are forward results. `partition` is called
    as PyTorch's partitioners are: partition(joint, example_inputs, num_fwd_outputs=N)."""
    aot = copy.deepcopy(joint)
    # Older partitioners read the forward/backward split of the outputs from the spec;
    # torch 2.x's take it as the num_fwd_outputs keyword.
    aot._out_spec = _out_spec(num_fwd_outputs, len(_outputs(joint)) - num_fwd_outputs)
    return partition(aot, example_inputs, num_fwd_outputs=num_fwd_outputs)


def _fake_of(meta, mode):
    """A FakeTensor with the shape, strides and dtype a TensorMetadata records."""
    if isinstance(meta, (tuple, list)) and not hasattr(meta, "dtype"):
        return tuple(_fake_of(m, mode) for m in meta)
    if not hasattr(meta, "dtype"):
        return None
    with mode:
        return torch.empty_strided(tuple(meta.shape), tuple(meta.stride), dtype=meta.dtype, device="cpu")


def _add_fake_values(graph):
    """node.meta["val"] as AOTAutograd's joints carry it (a FakeTensor per tensor): torch
    2.x's partitioners size and classify nodes by it. Made from the tensor_meta the
    exporter recorded, where a node has no val yet."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    for node in graph.nodes:
        if "val" in node.meta or "tensor_meta" not in node.meta:
            continue
        fake = _fake_of(node.meta["tensor_meta"], mode)
        if fake is not None:
            node.meta["val"] = fake


def _phase(node):
    return node.meta.get("passcheck", {}).get("phase")


def _backward_nodes(graph):
    """Backward and optimizer nodes closed over their users (passes/partition/classify.h)."""
    backward = set()
    for node in graph.nodes:
        if node.op == "call_function" and (_phase(node) in ("backward", "optimizer")
                                           or any(isinstance(a, torch.fx.Node) and a in backward
                                                  for a in node.all_input_nodes)):
            backward.add(node)
    return backward


def _copy_into(target_graph, env, source_node):
    """Copies `source_node` and the call nodes it needs that `env` (name -> node of
    target_graph) lacks into target_graph, before its output node."""
    if source_node.name in env:
        return env[source_node.name]
    for arg in source_node.all_input_nodes:
        _copy_into(target_graph, env, arg)
    if source_node.op != "call_function":
        raise ExportError(f"the backward seed needs '{source_node.name}' ({source_node.op}), which the forward "
                          "part does not have")
    output = [n for n in target_graph.nodes if n.op == "output"][0]
    with target_graph.inserting_before(output):
        copied = target_graph.node_copy(source_node, lambda n: env[n.name])
    env[source_node.name] = copied
    return copied


# In-place overloads whose functional twin has another overload name.
_FUNCTIONAL_OVERLOAD = {"aten::bernoulli_.float": "p"}


def functionalize_private_temporaries(gm):
    """Rewrites in-place updates of private temporaries (`x.add_(eps)` on a value no
    later node reads but through the update's result) into their functional overloads,
    as AOTAutograd's functionalization would record them. PyTorch's partitioners take
    such a functional joint: they pin an in-place op in the forward, and fail on an
    in-place random draw (a dropout's bernoulli_ on its empty_like) they are asked to
    recompute. graph_trainer's tracer keeps rms_norm's in-place eps add; passcheck's
    tracer keeps dropout's bernoulli_. Returns how many nodes were rewritten."""
    order = {n: i for i, n in enumerate(gm.graph.nodes)}
    rewritten = 0
    for node in list(gm.graph.nodes):
        target = node.target
        if node.op != "call_function" or not isinstance(target, torch._ops.OpOverload):
            continue
        name = target._schema.name.split("::")[-1]
        if not name.endswith("_") or name.endswith("__") or not node.args:
            continue
        written = node.args[0]
        if not isinstance(written, torch.fx.Node) or written.op != "call_function":
            continue  # an input's update is a real side effect: kept
        if any(order[u] > order[node] for u in written.users if u is not node):
            continue  # the temporary is read again after its update
        packet = getattr(torch.ops.aten, name[:-1], None)
        overload = _FUNCTIONAL_OVERLOAD.get(target._schema.name + "." + target._overloadname, target._overloadname)
        functional = getattr(packet, overload, None) if packet is not None else None
        if functional is None:
            continue
        node.target = functional
        rewritten += 1
    if rewritten:
        gm.recompile()
    return rewritten


def partition_passcheck_joint(gm, partition):
    """Runs `partition` (functorch's calling convention: partition(joint, inputs) ->
    (forward, backward)) on the joint GraphModule passcheck wrote; returns a
    PartitionedModule whose parts run in order compute the joint's outputs."""
    original = copy.deepcopy(gm)
    aot = copy.deepcopy(gm)
    graph = aot.graph
    backward = _backward_nodes(graph)
    # AOTAutograd tags every joint node forward or backward; torch 2.x's default_partition
    # takes the forward to end at the last node tagged forward (untagged, it would be the
    # last primal, and the whole forward would be recomputed in the backward), and every
    # partitioner pins an in-place op not tagged backward in the forward.
    for node in graph.nodes:
        if node.op == "call_function" and node.meta.get("partitioner_tag") not in ("must_be_in_forward",
                                                                                  "must_be_in_backward"):
            node.meta["partitioner_tag"] = "is_backward" if node in backward else "is_forward"
    roots = [n for n in graph.nodes if n in backward and not any(a in backward for a in n.all_input_nodes)]
    # The tangent is ones_like of the loss; other backward nodes that read only forward
    # values (a mask eq(x, w) of a minimum's backward) stay nodes, unclaimed as in an
    # AOTAutograd joint: made tangents too, two equal ones would hide from the
    # partitioner's CSE. A graph without that seed (a minimized one) seeds at every root.
    seeds = [n for n in roots if getattr(n.target, "overloadpacket", None) is torch.ops.aten.ones_like] or roots
    for seed in seeds:
        returns = getattr(getattr(seed.target, "_schema", None), "returns", [None])
        if seed.target is operator.getitem or len(returns) != 1 or "passcheck_names" in seed.meta:
            raise ExportError(f"backward seed '{seed.name}' has several outputs; a tangent is one tensor")
    _add_fake_values(graph)
    for node in graph.nodes:
        # AOTAutograd's multi-output nodes carry no tensor_meta (their getitems do); the
        # partitioners size every node that has one as a single tensor.
        if isinstance(node.meta.get("tensor_meta"), tuple) and "passcheck_names" in node.meta:
            del node.meta["tensor_meta"]
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    for i, node in enumerate(placeholders):
        node.target = "primals_%d" % (i + 1)  # the name (passcheck's) stays
    tangents = []
    for i, seed in enumerate(seeds):
        where = graph.inserting_after(placeholders[-1]) if placeholders else graph.inserting_before(next(iter(graph.nodes)))
        with where:
            tangent = graph.placeholder("tangents_%d" % (i + 1))
        tangent.meta = dict(seed.meta)
        seed.replace_all_uses_with(tangent)
        graph.erase_node(seed)
        tangents.append((tangent, seed.name))
        placeholders.append(tangent)
    outputs = _outputs(aot)
    is_backward = [isinstance(v, torch.fx.Node) and (v in backward or v in {t for t, _ in tangents}) for v in outputs]
    order = [i for i, b in enumerate(is_backward) if not b] + [i for i, b in enumerate(is_backward) if b]
    output_node = [n for n in graph.nodes if n.op == "output"][0]
    output_node.args = (tuple(outputs[i] for i in order),)
    aot.recompile()
    num_forward = is_backward.count(False)
    forward, backward_gm = partition_joint(aot, partition, num_forward)

    # The forward computes each seed (from the original joint) and hands it to the
    # backward in place of its tangent.
    env = {n.name: n for n in forward.graph.nodes if n.op != "output"}
    for node in forward.graph.nodes:
        if node.op == "placeholder":
            env[node.name] = node
    by_name = {n.name: n for n in original.graph.nodes}
    forward_out = [n for n in forward.graph.nodes if n.op == "output"][0]
    results = list(_outputs(forward))
    bwd_names = {n.name for n in backward_gm.graph.nodes if n.op == "placeholder"}
    for tangent, seed_name in tangents:
        if tangent.name not in bwd_names:
            continue  # the backward never reads this seed
        copied = _copy_into(forward.graph, env, by_name[seed_name])
        # export_partitioned links the backward's inputs to forward outputs by name.
        for node in backward_gm.graph.nodes:
            if node.op == "placeholder" and node.name == tangent.name:
                node.name = copied.name
                node.target = copied.name
        results.append(copied)
    forward_out.args = (tuple(results),)
    forward.recompile()
    backward_gm.recompile()
    returns = [None] * len(order)
    for position, index in enumerate(order):
        returns[index] = position
    text = export_partitioned(original, forward, backward_gm, num_forward, kinds=placeholder_kinds(original),
                              returns=returns)
    return PartitionedModule(text, forward, backward_gm)


