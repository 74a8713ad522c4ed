"""Registered Python mutants: known-buggy Python passes, each with the check of passcheck
that must catch it and the way the same campaign misses it when that check (or the
bridge's feature it needs) is switched off. suites/python_pass/hand_over_test.py runs
every entry both ways.

Each entry: (function, what is wrong, extra fuzz arguments that catch it, extra fuzz
arguments under which the campaign misses it).
"""
import torch

from passcheck_fx.callers import caller, example_inputs

_VIEWS = (torch.ops.aten.view.default, torch.ops.aten._unsafe_view.default, torch.ops.aten.reshape.default)


@caller("graph_trainer")
def remove_view_of_equal_numel(gm):
    """graph_trainer's remove_identity_view_pass with its test widened: a view whose
    meta["val"] has as many elements as its input's is taken for an identity (it is one
    only when the shape is equal). Keyed on meta["val"] like the real pass, so it acts
    only on graphs handed over as graph_trainer's tracer makes them."""
    example_inputs(gm)
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target not in _VIEWS:
            continue
        source = node.args[0]
        before, after = source.meta.get("val"), node.meta.get("val")
        if not isinstance(before, torch.Tensor) or not isinstance(after, torch.Tensor):
            continue
        if before.numel() == after.numel() and before.dtype == after.dtype:
            node.replace_all_uses_with(source)
            gm.graph.erase_node(node)
    gm.recompile()
    return gm


MUTANTS = {
    "remove_view_of_equal_numel": (remove_view_of_equal_numel,
                                   "a reshaping view taken for an identity view",
                                   [], ["--python-hand-over", "bare"]),
}
