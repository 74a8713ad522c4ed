"""graph_trainer's selective activation checkpointing on torchtitan's own graphs, held to
what it promises and compared with passcheck's implementation of the same intent.

For one model and one memory policy (default, full, eager):
- graph_trainer's `tag_sac_policy` tags the traced joint graph and its
  `selective_activation_remat_pass` duplicates the recomputed nodes into the backward;
- passcheck's `ac-regions,sac-tag{policy=P}` tags the same exported graph and its `remat`
  rematerializes, both on passcheck's tags and on graph_trainer's (so a difference in
  remat is told from a difference in tagging);
- numerics: every rematerialized graph bit for bit equal to the untouched one
  (`passcheck equiv`), and graph_trainer's over 5 optimizer steps equal to eager;
- decisions: the saved and recomputed sets of both taggers, node by node;
- memory: passcheck's executor's measured peak and the bytes held from the forward into
  the backward, for each graph; the same model under eager `torch.utils.checkpoint` with
  torchtitan's own eager AC of that policy: its numerics against no AC and against the
  rematerialized graph, and the bytes alive at the loss and the peak, with and without
  checkpointing (measured in Python by LiveBytes).
"""

import collections
import copy
import os
import time
import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from . import models, tools

POLICIES = ("default", "full", "eager")


def graph_trainer_policy(policy):
    from torchtitan.experiments.graph_trainer import memory_policy as mp
    if policy == "default":
        return mp._make_default_memory_policy()
    if policy == "full":
        return mp._make_full_memory_policy()
    if policy == "eager":
        return mp._make_eager_memory_policy()
    raise ValueError(f"unknown memory policy {policy!r}: expected one of {', '.join(POLICIES)}")


def mislabelled_accumulations(gm):
    """The autograd engine's gradient accumulations in the layers' backward that
    graph_trainer's tracer labels with the loss's module FQN (they carry the sequence
    number of the loss's last op): backward nodes labelled `loss` after the first
    backward node of a layer. graph_trainer's remat starts its backward region after the
    last such node, so it skips the layers before it (upstream bug, see
    suites/torchtitan/upstream_bugs/remat_skipped_grad_accumulation_tagged_loss.py)."""
    from torchtitan.experiments.graph_trainer.common_utils import _get_module_fqn
    nodes = list(gm.graph.nodes)
    start = next((i for i, n in enumerate(nodes)
                  if n.meta.get("autograd_backward") and _get_module_fqn(n).startswith("layers")), len(nodes))
    return [n for n in nodes[start:] if n.meta.get("autograd_backward") and _get_module_fqn(n) == "loss"]


def relabel_accumulations(gm):
    """A copy of `gm` whose mislabelled accumulations carry the FQN of the layer value
    they add (what the tracer would record without the bug)."""
    from torchtitan.experiments.graph_trainer.common_utils import _get_module_fqn
    gm = copy.deepcopy(gm)
    for node in mislabelled_accumulations(gm):
        layer = next((_get_module_fqn(a) for a in node.all_input_nodes if _get_module_fqn(a).startswith("layers")),
                     "layers")
        node.meta["custom"] = dict(node.meta.get("custom") or {}, module_fqn=layer)
    return gm


def tag_and_remat(gm, policy="default"):
    """graph_trainer's SAC: its tagger with `policy`, then its remat pass, on a copy."""
    from torchtitan.experiments.graph_trainer.memory_policy import tag_sac_policy
    from torchtitan.experiments.graph_trainer.selective_activation_remat import selective_activation_remat_pass
    tagged = copy.deepcopy(gm)
    tag_sac_policy(tagged, policy_fn=graph_trainer_policy(policy))
    remat = selective_activation_remat_pass(copy.deepcopy(tagged))
    return tagged, remat


class LiveBytes(TorchDispatchMode):
    """Bytes of the storages the code under it creates (each counted once, released when
    its storage dies; views and in-place results of operands not counted): current and
    peak."""

    def __init__(self):
        super().__init__()
        self.current = 0
        self.peak = 0
        self._live = set()

    def _release(self, key, nbytes):
        self._live.discard(key)
        self.current -= nbytes

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        # A view or in-place result shares an operand's storage: nothing new (a slice of
        # the rotary cache, a transposed weight).
        operands = {id(a.untyped_storage()) for a in torch.utils._pytree.tree_leaves((args, kwargs))
                    if isinstance(a, torch.Tensor)}
        for t in torch.utils._pytree.tree_leaves(out):
            if isinstance(t, torch.Tensor):
                storage = t.untyped_storage()
                key = id(storage)
                if key in self._live or key in operands:
                    continue
                self._live.add(key)
                self.current += storage.nbytes()
                self.peak = max(self.peak, self.current)
                weakref.finalize(storage, self._release, key, storage.nbytes())
        return out


def _eager_ac(model, policy):
    """torchtitan's eager activation checkpointing of `policy` on `model`'s blocks: FullAC
    for full, SelectiveAC (every second matmul recomputed) for eager, and for default the
    per-op policy of graph_trainer's default (save the save list, recompute the rest)."""
    from torchtitan.distributed import activation_checkpoint as ac
    if policy == "full":
        ac.FullAC(ac.FullAC.Config()).apply(model)
    elif policy == "eager":
        ac.SelectiveAC(ac.SelectiveAC.Config(force_recompute_mm_shapes_by_fqns=[])).apply(model)
    else:
        from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
        from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts
        save_ops = ac._get_default_save_ops()

        def policy_fn(ctx, func, *args, **kwargs):
            return CheckpointPolicy.MUST_SAVE if func in save_ops else CheckpointPolicy.PREFER_RECOMPUTE

        layers = model.get_submodule("layers")
        for name, block in list(layers.named_children()):
            layers.register_module(name, checkpoint_wrapper(
                block, context_fn=lambda: create_selective_checkpoint_contexts(policy_fn), preserve_rng_state=True))
    return model


def eager_checkpoint_run(step, policy):
    """The step's model (fresh, same seed) under eager checkpointing of `policy`, and
    without: loss and gradients, the bytes alive when the loss is computed (what the
    forward holds into the backward) and the peak, both measured by LiveBytes."""
    from torchtitan.experiments.graph_trainer.common_utils import compute_annotated_loss
    results = {}
    tokens, labels, global_valid_tokens, extra = step.args
    for label, with_ac in (("eager", False), ("eager_ac", True)):
        model, _ = models.build_model(step.name, step.seed)
        if with_ac:
            _eager_ac(model, policy)
        meter = LiveBytes()
        with meter:
            # graph_trainer's fwd_bwd_step, with the bytes held at the loss read between.
            loss = compute_annotated_loss(step.loss_fn, model(tokens, **extra), labels,
                                          {"global_valid_tokens": global_valid_tokens})
            held = meter.current
            params = [p for _, p in model.named_parameters(remove_duplicate=False) if p.requires_grad]
            grads = torch.autograd.grad(loss, params)
        results[label] = ([loss.detach()] + [g.detach() for g in grads], held, meter.peak)
    return results


def compare_tags(theirs, ours, names):
    """Counts of the two taggers' decisions on the forward nodes both see, and examples
    of each kind of disagreement (node name, op)."""
    def kind(tag):
        if tag is None:
            return "untagged"
        return "save" if tag == "must_save" else "recompute"
    counts = collections.Counter()
    examples = collections.defaultdict(list)
    for name in names:
        a, b = kind(theirs.get(name)), kind(ours.get(name))
        counts[(a, b)] += 1
        if a != b and len(examples[(a, b)]) < 5:
            examples[(a, b)].append(name)
    return ({f"theirs {a} / ours {b}": n for (a, b), n in sorted(counts.items())},
            {f"theirs {a} / ours {b}": v for (a, b), v in sorted(examples.items())})


def verify_sac(model="llama3", policy="default", passcheck=None, workdir=None, steps=5, step=None):
    """Runs every check above; returns a dict of what was measured. Raises nothing for a
    property that fails: the dict's `failures` lists them."""
    passcheck = tools.find_passcheck(passcheck)
    work = tools.workdir(workdir)
    started = time.time()
    step = step or models.trace_step(model)
    kinds = step.kinds()
    inputs = tools.save(os.path.join(work, "inputs.pt"), step.flat_inputs())
    before = tools.export(step.gm, os.path.join(work, "before.graph"), kinds)

    # graph_trainer's pass, as shipped and on the graph with its mislabelled gradient
    # accumulations relabelled (so the remat pass itself is exercised).
    tagged, remat = tag_and_remat(step.gm, policy)
    theirs_tagged = tools.export(tagged, os.path.join(work, f"theirs-{policy}-tagged.graph"), kinds)
    theirs_remat = tools.export(remat, os.path.join(work, f"theirs-{policy}-remat.graph"), kinds)
    _, remat_relabelled = tag_and_remat(relabel_accumulations(step.gm), policy)
    theirs_relabelled = tools.export(remat_relabelled, os.path.join(work, f"theirs-{policy}-remat-relabelled.graph"),
                                     kinds)

    # passcheck's pass, end to end and on graph_trainer's tags.
    ours_tagged = os.path.join(work, f"ours-{policy}-tagged.graph")
    tools.call(passcheck, ["opt", before, "--pipeline", f"ac-regions,sac-tag{{policy={policy}}}", "-o", ours_tagged])
    ours_remat = os.path.join(work, f"ours-{policy}-remat.graph")
    tools.call(passcheck, ["opt", ours_tagged, "--pipeline", "remat", "-o", ours_remat])
    ours_on_theirs = os.path.join(work, f"ours-remat-on-theirs-{policy}.graph")
    tools.call(passcheck, ["opt", theirs_tagged, "--pipeline", "remat", "-o", ours_on_theirs])

    failures = []
    result = {"model": model, "policy": policy, "nodes": len(step.gm.graph.nodes), "workdir": work}

    # Decisions.
    forward = [n.name for n in step.gm.graph.nodes
               if n.op == "call_function" and not n.meta.get("autograd_backward")]
    theirs_tags = tools.recompute_tags(open(theirs_tagged).read())
    ours_tags = tools.recompute_tags(open(ours_tagged).read())
    result["tag_agreement"], result["tag_disagreements"] = compare_tags(theirs_tags, ours_tags, forward)
    result["mislabelled_accumulations"] = len(mislabelled_accumulations(step.gm))
    result["recomputed_nodes"] = {
        "theirs": sum(1 for n in remat.graph.nodes if n.name.endswith("_recomputed")),
        "theirs_relabelled": sum(1 for n in remat_relabelled.graph.nodes if n.name.endswith("_recomputed")),
        "ours": open(ours_remat).read().count("= ") - open(ours_tagged).read().count("= "),
        "ours_on_their_tags": open(ours_on_theirs).read().count("= ") - open(theirs_tagged).read().count("= "),
    }

    # Numerics: passcheck's executor, bit for bit against the untouched graph.
    for label, graph in (("theirs", theirs_remat), ("theirs_relabelled", theirs_relabelled), ("ours", ours_remat),
                         ("ours_on_their_tags", ours_on_theirs)):
        equal, report = tools.equiv(passcheck, before, graph, inputs)
        result[f"equiv_{label}"] = equal
        if not equal:
            failures.append(f"{label} remat ({policy}) changes numerics: " + " | ".join(report))

    # Numerics: torch's own runs, and 5 optimizer steps of graph_trainer's graph vs eager.
    plain_out = models.run_graph(step, step.gm)
    remat_out = models.run_graph(step, remat_relabelled)
    differ = tools.bitwise_equal_lists(plain_out, remat_out)
    result["torch_run_equal"] = not differ
    if differ:
        failures.append(f"graph_trainer remat ({policy}): torch's run differs from the untouched graph at outputs {differ[:5]}")
    eager_history, eager_params = models.train(step, None, steps)
    remat_history, remat_params = models.train(step, remat_relabelled, steps)
    steps_equal = (all(not tools.bitwise_equal_lists(a, b) for a, b in zip(eager_history, remat_history))
                   and not tools.bitwise_equal_lists(eager_params, remat_params))
    result[f"traced_remat_equals_eager_over_{steps}_steps"] = steps_equal
    if not steps_equal:
        failures.append(f"graph_trainer remat ({policy}): {steps} optimizer steps differ from eager")

    # Memory: passcheck's executor on each graph, and Python's instrument on torch's runs.
    result["passcheck_memory"] = {
        label: tools.run_figures(passcheck, graph, inputs)
        for label, graph in (("no_ac", before), ("theirs", theirs_remat), ("theirs_relabelled", theirs_relabelled),
                             ("ours", ours_remat))
    }
    eager = eager_checkpoint_run(step, policy)
    result["eager_memory"] = {
        "held_forward_to_backward_bytes": {"no_ac": eager["eager"][1], "checkpoint": eager["eager_ac"][1]},
        "peak_bytes": {"no_ac": eager["eager"][2], "checkpoint": eager["eager_ac"][2]}}
    eager_ac_differ = tools.bitwise_equal_lists(eager["eager"][0], eager["eager_ac"][0])
    result["eager_checkpoint_equals_no_ac"] = not eager_ac_differ
    graph_vs_eager_ac = tools.bitwise_equal_lists(remat_out, eager["eager_ac"][0])
    result["graph_remat_equals_eager_checkpoint"] = not graph_vs_eager_ac
    if graph_vs_eager_ac:
        failures.append(f"graph_trainer remat ({policy}) differs from eager torch.utils.checkpoint at outputs "
                        f"{graph_vs_eager_ac[:5]}")
    result["failures"] = failures
    result["seconds"] = round(time.time() - started, 1)
    return result
