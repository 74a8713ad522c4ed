"""graph_trainer's SAC tagging + selective_activation_remat on torchtitan's own graphs,
through passcheck (passcheck_fx.titan.sac): every rematerialized graph (graph_trainer's,
passcheck's, passcheck's remat on graph_trainer's tags) bit for bit equal to the untouched
step; graph_trainer's over 5 optimizer steps equal to eager and equal to eager
torch.utils.checkpoint under the same policy; both rematerializations hold less from the
forward into the backward than the untouched graph. The taggers' decisions are printed
side by side (docs/verifying-a-python-pass.md classifies their differences).

    sac_test.py PASSCHECK MODEL POLICY..."""
import json
import sys

import support
from passcheck_fx.titan import models, sac

passcheck = support.passcheck_binary()
model = sys.argv[2] if len(sys.argv) > 2 else "llama3"
step = models.trace_step(model)
for policy in sys.argv[3:] or sac.POLICIES:
    result = sac.verify_sac(model, policy, passcheck=passcheck, step=step)
    print(json.dumps(result, indent=1, default=str))
    support.check(not result["failures"], f"{model} {policy}: " + "; ".join(result["failures"]))
    memory = result["passcheck_memory"]
    held = {label: figures["held_forward_to_backward_bytes"] for label, figures in memory.items()}
    for label in ("theirs_relabelled", "ours"):
        support.check(held[label] < held["no_ac"], f"{model} {policy}: {label} remat holds {held[label]} bytes into "
                                                   f"the backward, the untouched graph {held['no_ac']}")
    if held["theirs"] >= held["no_ac"] or result["recomputed_nodes"]["theirs"] < result["recomputed_nodes"]["theirs_relabelled"]:
        # graph_trainer's remat as shipped: its backward region misses layers (upstream
        # bug, replayed by upstream_bugs/remat_skipped_grad_accumulation_tagged_loss.py).
        support.check(result["mislabelled_accumulations"] > 0,
                      f"{model} {policy}: graph_trainer's remat saves less than on the relabelled graph, and not "
                      f"because of the known upstream bug: {result['recomputed_nodes']}, held {held}")
        print(f"{model} {policy}: known upstream bug: graph_trainer's remat recomputes "
              f"{result['recomputed_nodes']['theirs']} nodes as shipped, {result['recomputed_nodes']['theirs_relabelled']} "
              f"with its {result['mislabelled_accumulations']} mislabelled gradient accumulations relabelled")
    support.check(result["recomputed_nodes"]["theirs_relabelled"] > 0 and result["recomputed_nodes"]["ours"] > 0,
                  f"{model} {policy}: a rematerialization recomputed nothing: {result['recomputed_nodes']}")
    support.check(result["eager_checkpoint_equals_no_ac"], f"{model} {policy}: eager checkpointing changed numerics")
