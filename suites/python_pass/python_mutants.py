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


_RETURNED_ALIASES = (torch.ops.aten.alias.default, torch.ops.aten.detach.default, torch.ops.aten.view.default,
                     torch.ops.aten.t.default)


def copy_returned_aliases(gm):
    """An "outputs own their memory" pass gone wrong: every returned view or alias is
    returned as a clone. Values stay equal; an output that aliased an input no longer does
    (AOTAutograd's runtime decided from the traced graph that writes through it reach the
    input). Caught by the aliasing property on cases with returned aliases (the generator
    feature aliased-outputs); generated programs alone return none."""
    output = [n for n in gm.graph.nodes if n.op == "output"][0]
    results = list(output.args[0])
    for i, value in enumerate(results):
        if isinstance(value, torch.fx.Node) and value.target in _RETURNED_ALIASES:
            with gm.graph.inserting_after(value):
                copy = gm.graph.call_function(torch.ops.aten.clone.default, (value,))
            copy.meta = dict(value.meta)
            results[i] = copy
    output.args = (tuple(results),)
    gm.recompile()
    return gm


def remove_every_clone(gm):
    """A no-op-clone remover without its guard: every clone is taken for a no-op, also one
    whose result is later written in place through a view (then the write lands in the
    clone's source, which later reads see). Caught on cases that write through a view of a
    copy (the generator feature writes-through-views); generated programs alone hold no
    clone for it to remove."""
    for node in list(gm.graph.nodes):
        if node.op == "call_function" and node.target == torch.ops.aten.clone.default:
            node.replace_all_uses_with(node.args[0])
            gm.graph.erase_node(node)
    gm.recompile()
    return gm


MUTANTS = {
    "remove_view_of_equal_numel": (remove_view_of_equal_numel,
                                   "a reshaping view taken for an identity view",
                                   [], ["--python-hand-over", "bare"]),
    "copy_returned_aliases": (copy_returned_aliases,
                              "returned aliases of inputs copied (the aliasing property)",
                              ["--features", "aliased-outputs"], ["--features", "none"]),
    "remove_every_clone": (remove_every_clone,
                           "a clone written through a view removed",
                           ["--features", "writes-through-views"], ["--features", "none"]),
}
