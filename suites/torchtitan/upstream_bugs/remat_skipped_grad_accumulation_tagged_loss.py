"""Upstream bug (torchtitan 0.3.0 graph_trainer on torch 2.15): selective activation
remat does nothing on a model with residual connections.

The autograd engine's gradient accumulations (the `add` summing the gradients a residual
stream receives from two paths) are traced with the sequence number of the loss's last
forward op, so graph_trainer's tracer (`_copy_fwd_metadata_to_bw_nodes`) gives them the
loss's `module_fqn`. `selective_activation_remat_pass` starts its backward regions after
the last `loss`/`lm_head` node of the graph, which is now one of those accumulations deep
inside the layers' backward: the layers' backward is skipped, nothing is recomputed, and
every activation tagged for recomputation stays alive into the backward. Numerics are
unchanged, so only a memory or decision check sees it.

This script: a two-block residual model annotated as graph_trainer annotates models,
traced by graph_trainer's tracer, tagged by its full-recompute policy, rematerialized.
Exit 1 while the bug is there (the backward still reads forward values tagged for
recomputation), 0 once fixed.

    python3 suites/torchtitan/upstream_bugs/remat_skipped_grad_accumulation_tagged_loss.py
"""
import sys

import torch
from torchtitan.experiments.graph_trainer.common_utils import _get_module_fqn, annotate_module_fqns, compute_annotated_loss
from torchtitan.experiments.graph_trainer.make_fx_tracer import minimal_fx_tracer
from torchtitan.experiments.graph_trainer.memory_policy import _make_full_memory_policy, tag_sac_policy
from torchtitan.experiments.graph_trainer.selective_activation_remat import selective_activation_remat_pass


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Linear(8, 8, bias=False)

    def forward(self, x):
        return x + torch.relu(self.w(x))  # residual: x's gradient is accumulated


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleDict({"0": Block(), "1": Block()})

    def forward(self, x):
        for layer in self.layers.values():
            x = layer(x)
        return x


def step(model, x):
    loss = compute_annotated_loss(lambda pred, _labels: pred.square().sum(), model(x), None)
    return [loss] + list(torch.autograd.grad(loss, list(model.parameters())))


torch.manual_seed(0)
model = Model()
annotate_module_fqns(model)
x = torch.randn(4, 8)
gm = minimal_fx_tracer(lambda x: step(model, x), module=model)(x).gm
tag_sac_policy(gm, policy_fn=_make_full_memory_policy())


def first_layer_backward(nodes):
    return next(i for i, n in enumerate(nodes)
                if n.meta.get("autograd_backward") and _get_module_fqn(n).startswith("layers"))


# The loss's own backward runs first; a node labelled 'loss' after the first backward node
# of a layer is one of the engine's gradient accumulations, mislabelled.
before = list(gm.graph.nodes)
misattributed = [n.name for n in before[first_layer_backward(before):]
                 if n.meta.get("autograd_backward") and _get_module_fqn(n) == "loss"]


def recomputable(node):
    return node.meta.get("recompute") is not None and "RECOMPUTE" in str(node.meta["recompute"])


result = selective_activation_remat_pass(gm)
recomputed = [n.name for n in result.graph.nodes if n.name.endswith("_recomputed")]
# What remat promises: a recomputable forward value is not read by the layers' backward
# (which starts at the first backward node of a layer; the loss's backward before it is
# left alone by design): that backward reads the duplicate, so the value is not held
# from the forward into the backward.
nodes = list(result.graph.nodes)
start = first_layer_backward(nodes)
layer_backward = {n for n in nodes[start:] if n.meta.get("autograd_backward")
                  and not n.name.endswith("_recomputed")}
still_held = [n.name for n in nodes[:start]
              if recomputable(n) and not n.meta.get("autograd_backward") and any(u in layer_backward for u in n.users)]
print(f"gradient accumulations in the layers' backward labelled module_fqn='loss': {misattributed}")
print(f"nodes recomputed by selective_activation_remat_pass: {len(recomputed)}")
print(f"recomputable forward nodes the backward still reads after it: {still_held}")
if still_held:
    print("BUG: these stay alive into the backward: remat's backward region starts after the last 'loss' node")
    sys.exit(1)
sys.exit(0)
