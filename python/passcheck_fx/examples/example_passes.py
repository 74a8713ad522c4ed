"""Example Python passes over torch.fx GraphModules, fuzzed in docs/python-passes.md and by
the suites/python_pass tests with `passcheck fuzz --python-pass example_passes:FUNCTION
--python-path python/passcheck_fx/examples`.

identity and dce are correct; upstream_cse is PyTorch's own CSEPass (1.13 merges two equal
nodes whose results are then both mutated in place: docs/python-passes.md); swap_first_add
is deliberately broken (it turns the first aten.add.Tensor into aten.sub.Tensor), so the
fuzzer has something to catch.
"""
import torch


def identity(gm):
    """Leaves the graph as it is (returns None: rewritten in place, here not at all)."""
    return None


def dce(gm):
    """torch.fx's dead-code elimination."""
    gm.graph.eliminate_dead_code()
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
