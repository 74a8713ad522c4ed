"""torchtitan graph_trainer's passes as `fuzz --python-pass` targets.

The fuzzer hands a pass a GraphModule rebuilt from passcheck's text, whose nodes carry
passcheck's metadata in `node.meta["passcheck"]` (phase, fqn, recompute, ...).
graph_trainer's passes read PyTorch's tracer conventions instead: `autograd_backward`
for a backward node, `custom["module_fqn"]` for the module, `recompute` for a
CheckpointPolicy. `graph_trainer_meta` writes those from passcheck's, so a generated
joint graph looks to the pass as its own tracer's graph does.

    passcheck fuzz --models --python-pass passcheck_fx.titan.upstream_passes:sac_remat_default
    passcheck fuzz --situations --python-pass passcheck_fx.titan.upstream_passes:canonicalize
"""

# At module level, not in each function: a fuzz campaign's fork server imports this module
# once, and every case runs in a fork of it; an import inside a pass would be repeated by
# every case (over a second each for graph_trainer's modules).
import operator

import torch
from torch._functorch.partitioners import min_cut_rematerialization_partition
from torch.utils.checkpoint import CheckpointPolicy
from torchtitan.experiments.graph_trainer.memory_policy import tag_sac_policy
from torchtitan.experiments.graph_trainer.remove_noop_passes import canonicalize_graph_pass, eliminate_dead_code_pass
from torchtitan.experiments.graph_trainer.selective_activation_remat import selective_activation_remat_pass

from .. import partition
from .sac import graph_trainer_policy, relabel_accumulations

_POLICIES = {
    "must_save": "MUST_SAVE",
    "prefer_save": "PREFER_SAVE",
    "must_recompute": "MUST_RECOMPUTE",
    "prefer_recompute": "PREFER_RECOMPUTE",
}


def graph_trainer_meta(gm):
    """Adds graph_trainer's metadata keys from passcheck's (in place); returns gm."""
    for node in gm.graph.nodes:
        own = node.meta.get("passcheck")
        if node.op == "call_function" and node.target is operator.getitem and not isinstance(own, dict):
            # The Python writer's getitems of a multi-output node carry no record; as in
            # graph_trainer's trace, they belong to their parent's phase and module.
            parent = node.args[0]
            for key in ("autograd_backward", "custom", "seq_nr"):
                if isinstance(parent, torch.fx.Node) and key in parent.meta:
                    node.meta[key] = parent.meta[key]
            continue
        if not isinstance(own, dict):
            continue
        if own.get("phase") == "backward":
            node.meta["autograd_backward"] = True
        custom = dict(node.meta.get("custom") or own.get("custom") or {})
        if own.get("fqn") and "module_fqn" not in custom:
            custom["module_fqn"] = own["fqn"]
        if custom:
            node.meta["custom"] = custom
        if own.get("recompute") in _POLICIES and "recompute" not in node.meta:
            node.meta["recompute"] = getattr(CheckpointPolicy, _POLICIES[own["recompute"]])
        if "seq" in own and "seq_nr" not in node.meta:
            node.meta["seq_nr"] = own["seq"]
    return gm


# graph_trainer's remat refuses random ops in recompute regions with this RuntimeError, by
# design (its docstring): a declined case, not a failure of the pass.
_RNG_REFUSAL = "Activation checkpoint rematerialization in `forward-loss-backward` graph does not support RNG ops"


def _sac_remat(gm, policy):
    graph_trainer_meta(gm)
    tag_sac_policy(gm, policy_fn=graph_trainer_policy(policy))
    try:
        return selective_activation_remat_pass(gm)
    except RuntimeError as error:
        if str(error).startswith(_RNG_REFUSAL):
            return gm
        raise


def sac_remat_default(gm):
    """tag_sac_policy with the default memory policy, then selective_activation_remat_pass."""
    return _sac_remat(gm, "default")


def sac_remat_default_relabelled(gm):
    """sac_remat_default on the graph with the gradient accumulations graph_trainer's
    tracer mislabels as the loss relabelled (passcheck_fx.titan.sac.relabel_accumulations):
    what its remat does once that upstream bug is fixed."""
    return _sac_remat(relabel_accumulations(graph_trainer_meta(gm)), "default")


def sac_remat_full(gm):
    """tag_sac_policy with the full-recompute policy, then selective_activation_remat_pass."""
    return _sac_remat(gm, "full")


def sac_remat_eager(gm):
    """tag_sac_policy with the eager-compatible policy, then selective_activation_remat_pass."""
    return _sac_remat(gm, "eager")


def selective_activation_remat(gm):
    """selective_activation_remat_pass alone, on the recompute tags the graph carries."""
    return selective_activation_remat_pass(graph_trainer_meta(gm))


def canonicalize(gm):
    """canonicalize_graph_pass: remove detach, identity views, back-to-back transposes and
    identity slices; views become reshapes."""
    return canonicalize_graph_pass(graph_trainer_meta(gm))


def eliminate_dead_code(gm):
    """eliminate_dead_code_pass: FX's dead-code elimination with asserts forced pure."""
    return eliminate_dead_code_pass(graph_trainer_meta(gm))


def cleanup_then_sac(gm):
    """graph_trainer's compile-time order: dead code, canonicalize, default SAC + remat."""
    eliminate_dead_code(gm)
    canonicalize(gm)
    return _sac_remat(gm, "default")



def _min_cut_after_sac(gm, policy):
    graph_trainer_meta(gm)
    # AOTAutograd hands the partitioner a functional joint (graph_trainer's joint mode too).
    partition.functionalize_private_temporaries(gm)
    tag_sac_policy(gm, policy_fn=graph_trainer_policy(policy))
    return partition.partition_passcheck_joint(gm, min_cut_rematerialization_partition)


@partition.partitioner
def min_cut_sac_default(gm):
    """graph_trainer's default SAC tags, then PyTorch's min-cut partitioner (which honours
    them): the joint-graph mode of graph_trainer's memory policy."""
    return _min_cut_after_sac(gm, "default")
