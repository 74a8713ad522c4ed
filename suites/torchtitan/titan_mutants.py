"""Known-buggy variants of graph_trainer's passes (test side only; registered explicitly
in MUTANTS): each must make the torchtitan suite's checks fail, which shows those checks
can fail. They are written as a careless edit of the real pass would behave."""
import torch

from passcheck_fx.titan import sac


def _rewire_first_recomputed_input(gm):
    """The bug: a recomputed duplicate reads the wrong forward value of the same type (an
    argument-mapping slip when copying the node into the backward)."""
    forward = [n for n in gm.graph.nodes if n.op == "call_function" and not n.meta.get("autograd_backward")]
    for node in gm.graph.nodes:
        if not node.name.endswith("_recomputed"):
            continue
        for i, arg in enumerate(node.args):
            val = getattr(arg, "meta", {}).get("val") if isinstance(arg, torch.fx.Node) else None
            if not isinstance(val, torch.Tensor):
                continue
            for other in forward:
                other_val = other.meta.get("val")
                if (other is not arg and isinstance(other_val, torch.Tensor) and other_val.shape == val.shape
                        and other_val.dtype == val.dtype and other.name not in node.name):
                    args = list(node.args)
                    args[i] = other
                    node.args = tuple(args)
                    gm.recompile()
                    return gm
    raise RuntimeError("no recomputed node to break: the mutant needs a rematerialized graph")


def sac_remat_wrong_input(gm, example_inputs=None):
    """graph_trainer's default SAC + remat (on the relabelled graph, where its remat acts),
    then one recomputed node reads a wrong input."""
    _, remat = sac.tag_and_remat(sac.relabel_accumulations(gm), "default")
    return _rewire_first_recomputed_input(remat)


def canonicalize_cancels_any_transposes(gm, example_inputs=None):
    """graph_trainer's canonicalize, but its back-to-back transpose removal cancels
    transpose(transpose(x, a, b), c, d) whatever the dimensions (the check that both swap
    the same pair forgotten)."""
    from passcheck_fx.titan import upstream_passes
    upstream_passes.graph_trainer_meta(gm)
    transpose = torch.ops.aten.transpose.int
    for node in list(gm.graph.nodes):
        inner = node.args[0] if node.op == "call_function" and node.args else None
        if node.target is transpose and isinstance(inner, torch.fx.Node) and inner.target is transpose:
            node.replace_all_uses_with(inner.args[0])
    gm.graph.eliminate_dead_code()
    gm.recompile()
    return upstream_passes.canonicalize(gm)


# name -> (mutant, the check that must catch it): verify_pass on torchtitan's llama3
# (verify_pass_test.py), or a fuzz campaign on the cleanup situations (fuzz_test.py; no
# transpose pair with two different dimension pairs occurs in llama3's graph).
MUTANTS = {
    "sac_remat_wrong_input": (sac_remat_wrong_input, "verify_pass"),
    "canonicalize_cancels_any_transposes": (canonicalize_cancels_any_transposes, "fuzz --situations"),
}
