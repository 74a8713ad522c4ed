"""Example Python passes over torch.fx GraphModules, fuzzed in docs/python-passes.md and by
the suites/python_pass tests with `passcheck fuzz --python-pass example_passes:FUNCTION
--python-path python/passcheck_fx/examples`.

identity and dce are correct (dce keeps in-place updates and random draws); upstream_cse
is PyTorch's own CSEPass (1.13 merges two equal nodes whose results are then both mutated
in place: docs/python-passes.md) and upstream_dce its Graph.eliminate_dead_code;
swap_first_add is deliberately broken (it turns the first aten.add.Tensor into
aten.sub.Tensor), so the fuzzer has something to catch.

The partitioners (marked passcheck_fx.partitioner: they return a module, a forward and a
backward part) wrap functorch's min_cut_rematerialization_partition and default_partition
through passcheck_fx.partition_passcheck_joint; min_cut_dropping_saved_value and
min_cut_swapping_saved_values are deliberately broken wrappers of the min-cut partitioner.
"""
import torch

from passcheck_fx import partition_passcheck_joint, partitioner


def identity(gm):
    """Leaves the graph as it is (returns None: rewritten in place, here not at all)."""
    return None


def annotate_value_bytes(gm):
    """Records each value's size in bytes as node.meta["custom"]["value_bytes"], read from
    node.meta["val"] (the FakeTensor a traced graph carries, as graph_trainer's memory
    policy pass reads it). Correct, and metadata only: it changes no computation. Handed a
    graph without meta["val"] it finds nothing to annotate."""
    for node in gm.graph.nodes:
        val = node.meta.get("val")
        if node.op == "call_function" and isinstance(val, torch.Tensor):
            node.meta.setdefault("custom", {})["value_bytes"] = str(val.numel() * val.element_size())
    return gm


def div_as_mul_by_reciprocal(gm):
    """Rewrites x / c (aten.div.Scalar) as x * (1 / c): cheaper, and equal up to rounding
    (1 / c is rounded once more). Correct for a pass whose contract allows rounding
    changes; checked with a declared tolerance (`fuzz --python-tolerance-ulp N`), it fails
    the default bit-for-bit comparison."""
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target == torch.ops.aten.div.Scalar and \
                isinstance(node.args[1], (int, float)) and node.args[1] != 0:
            node.target = torch.ops.aten.mul.Scalar
            node.args = (node.args[0], 1.0 / node.args[1])
    gm.recompile()
    return gm


def _has_effects(node):
    """Writes an argument in place, or draws random numbers (removing it would shift the
    random stream of every later draw)."""
    schema = getattr(node.target, "_schema", None)
    if schema is None:
        return False
    seeded = any(str(tag).endswith("nondeterministic_seeded") for tag in getattr(node.target, "tags", []))
    return seeded or any(a.alias_info is not None and a.alias_info.is_write for a in schema.arguments)


def dce(gm):
    """Dead-code elimination that keeps in-place updates and random draws (torch.fx's
    own, upstream_dce, removes an unused add_ on a buffer: docs/python-passes.md)."""
    changed = True
    while changed:
        changed = False
        for node in reversed(list(gm.graph.nodes)):
            if node.op == "call_function" and not node.users and not _has_effects(node):
                gm.graph.erase_node(node)
                changed = True
    gm.recompile()
    return gm


def swap_first_add(gm):
    """Deliberately wrong: the first x + y becomes x - y."""
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target == torch.ops.aten.add.Tensor:
            node.target = torch.ops.aten.sub.Tensor
            break
    gm.recompile()
    return gm


def upstream_cse(gm):
    """torch.fx's common-subexpression elimination as PyTorch ships it (returns a PassResult)."""
    from torch.fx.passes.dialect.common.cse_pass import CSEPass
    return CSEPass()(gm)


def upstream_dce(gm):
    """torch.fx's Graph.eliminate_dead_code as PyTorch ships it."""
    gm.graph.eliminate_dead_code()
    gm.recompile()
    return gm


@partitioner
def upstream_min_cut(gm):
    """functorch's min_cut_rematerialization_partition on the joint graph."""
    from functorch.compile import min_cut_rematerialization_partition
    return partition_passcheck_joint(gm, min_cut_rematerialization_partition)


@partitioner
def upstream_default_partition(gm):
    """functorch's default_partition on the joint graph."""
    from functorch.compile import default_partition
    return partition_passcheck_joint(gm, default_partition)


def _tamper_saved(tamper):
    """min-cut, then `tamper(backward, saved)` on the backward's saved-value placeholders."""
    from functorch.compile import min_cut_rematerialization_partition

    def partition(joint, inputs, *, num_fwd_outputs):
        forward, backward = min_cut_rematerialization_partition(joint, inputs, num_fwd_outputs=num_fwd_outputs)
        saved = [n for n in backward.graph.nodes if n.op == "placeholder" and "tangents" not in n.name]
        tamper(backward, saved)
        backward.recompile()
        return forward, backward
    return partition


def _drop_first_saved(backward, saved):
    # Deliberately wrong: the backward reads a zero tensor instead of the first saved
    # tensor it uses.
    for node in saved:
        if node.users and "tensor_meta" in node.meta:
            with backward.graph.inserting_after(node):
                zeros = backward.graph.call_function(torch.ops.aten.zeros_like.default, (node,))
            zeros.meta = dict(node.meta)
            node.replace_all_uses_with(zeros)
            zeros.args = (node,)
            return


def _swap_two_saved(backward, saved):
    # Deliberately wrong: two saved values of the same type trade places in the backward.
    for i, a in enumerate(saved):
        for b in saved[i + 1:]:
            ma, mb = a.meta.get("tensor_meta"), b.meta.get("tensor_meta")
            if a.users and b.users and ma is not None and mb is not None and \
                    (ma.shape, ma.dtype, ma.stride) == (mb.shape, mb.dtype, mb.stride):
                users_a, users_b = list(a.users), list(b.users)
                for user in users_a:
                    user.replace_input_with(a, b)
                for user in users_b:
                    user.replace_input_with(b, a)
                return


@partitioner
def min_cut_dropping_saved_value(gm):
    """Deliberately broken: min-cut whose backward reads zeros in place of a saved value."""
    return partition_passcheck_joint(gm, _tamper_saved(_drop_first_saved))


@partitioner
def min_cut_swapping_saved_values(gm):
    """Deliberately broken: min-cut whose backward swaps two saved values of one type."""
    return partition_passcheck_joint(gm, _tamper_saved(_swap_two_saved))
