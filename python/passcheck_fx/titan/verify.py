"""One call for a torchtitan pass author: trace one of torchtitan's debug models with
graph_trainer's tracer, apply your pass to the joint graph, and verify it bit for bit.

    from passcheck_fx.titan import verify_pass
    report = verify_pass(my_pass, model="llama3", steps=5)   # raises PassVerificationError

What is checked (each a line of `report.failures` when it does not hold):
- the pass keeps the graph's inputs (their number and order);
- passcheck's executor computes the same bits from the graph after the pass as from the
  graph before it, on the model's real inputs (`passcheck equiv`): every output (loss
  and gradients) and every input after the run;
- torch's own run of the two graphs gives the same bits;
- `steps` optimizer steps (AdamW) driven by the graph after the pass give the same
  losses, gradients and parameters as eager training of the same model.
The graph before the pass and the inputs are written before the pass runs, so a pass that
crashes the process still leaves what replays it; `report.replay` is the one-line command.
"""

import dataclasses
import inspect
import os
import time

import torch

from ..pass_worker import graph_module_of
from . import models, tools


class PassVerificationError(AssertionError):
    """The pass changed what the training step computes (an AssertionError, so pytest
    reports it as a failed check)."""


@dataclasses.dataclass
class PassVerification:
    pass_name: str
    model: str
    steps: int
    failures: list
    figures: dict
    files: dict
    replay: str
    seconds: float

    @property
    def ok(self):
        return not self.failures

    @property
    def changed(self):
        """Whether the pass changed what the graph computes (its nodes, not only their
        metadata): an unchanged graph verifies trivially, which is worth knowing about a
        pass meant to act on this model."""
        return self.figures.get("graph changed") == "yes"

    def summary(self):
        lines = [f"{self.pass_name} on torchtitan {self.model}: "
                 + ("verified" if self.ok else f"{len(self.failures)} failure(s)") + f" ({self.seconds:.1f} s)"]
        for key, value in self.figures.items():
            lines.append(f"  {key}: {value}")
        if not self.changed and not self.failures:
            lines.append("  NOTE: the pass left the graph's computation unchanged: only the identity was verified")
        for failure in self.failures:
            lines.append(f"  FAILED: {failure}")
        lines.append(f"  replay: {self.replay}")
        return "\n".join(lines)


def _call_pass(pass_fn, gm, example_inputs, options):
    """graph_trainer's passes take (gm, example_inputs, **options); plain FX passes (gm)."""
    try:
        parameters = inspect.signature(pass_fn).parameters
    except (TypeError, ValueError):
        parameters = {}
    positional = [p for p in parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]
    takes_inputs = len(positional) >= 2 or "example_inputs" in parameters
    result = pass_fn(gm, example_inputs, **options) if takes_inputs else pass_fn(gm, **options)
    return graph_module_of(gm, result)


def verify_pass(pass_fn, model="llama3", steps=5, *, seed=0, batch=models.DEFAULT_BATCH, seq=models.DEFAULT_SEQ,
                options=None, passcheck=None, workdir=None, raise_on_failure=True, step=None, require_change=False):
    """Verifies `pass_fn` on torchtitan's `model` debug graph; see the module's text.
    `options` are keyword arguments for the pass; `step` reuses an already traced
    models.TitanStep; `require_change` makes a pass that leaves the graph unchanged a
    failure (a pass that should act on this model but silently does nothing). Returns a
    PassVerification; raises PassVerificationError on a failure unless
    `raise_on_failure` is False."""
    started = time.time()
    passcheck = tools.find_passcheck(passcheck)
    work = tools.workdir(workdir)
    name = getattr(pass_fn, "__qualname__", None) or repr(pass_fn)
    step = step or models.trace_step(model, seed=seed, batch=batch, seq=seq)
    kinds = step.kinds()
    files = {"inputs": os.path.join(work, "inputs.pt"), "before": os.path.join(work, "before.graph"),
             "after": os.path.join(work, "after.graph")}
    tools.save(files["inputs"], step.flat_inputs())
    tools.export(step.gm, files["before"], kinds)
    replay = (f"{passcheck} equiv {files['before']} {files['after']} --inputs {files['inputs']} "
              f"--threads {tools.threads()}")

    failures, figures = [], {"nodes before": len(step.gm.graph.nodes)}
    original = step.gm
    gm = _call_pass(pass_fn, _copy(original), step.traced.example_inputs, options or {})
    figures["nodes after"] = len(gm.graph.nodes)
    before_inputs = [n.name for n in original.graph.nodes if n.op == "placeholder"]
    after_inputs = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
    if len(before_inputs) != len(after_inputs):
        failures.append(f"the pass changed the graph's inputs: {len(before_inputs)} before, {len(after_inputs)} after")
    else:
        after_kinds = {a: kinds[b] for a, b in zip(after_inputs, before_inputs)}
        tools.export(gm, files["after"], after_kinds)
        before_text, after_text = open(files["before"]).read(), open(files["after"]).read()
        changed = _computation(before_text) != _computation(after_text)
        figures["graph changed"] = "yes" if changed else ("only its metadata" if before_text != after_text else "no")
        if require_change and not changed:
            failures.append("the pass left the graph's computation unchanged (require_change)")
        equal, report = tools.equiv(passcheck, files["before"], files["after"], files["inputs"])
        figures["equivalence (passcheck equiv)"] = "bit for bit equal" if equal else "differs"
        if not equal:
            failures.append("passcheck's executor: the graph after the pass computes other bits: " + " | ".join(report))
        memory = {label: tools.run_figures(passcheck, files[label], files["inputs"]) for label in ("before", "after")}
        figures["peak bytes (measured, before -> after)"] = (
            f"{memory['before']['measured_peak_bytes']} -> {memory['after']['measured_peak_bytes']}")
        figures["held forward->backward (before -> after)"] = (
            f"{memory['before']['held_forward_to_backward_bytes']} -> {memory['after']['held_forward_to_backward_bytes']}")
        differ = tools.bitwise_equal_lists(models.run_graph(step, original), models.run_graph(step, gm))
        figures["torch's run"] = "bit for bit equal" if not differ else f"differs at {len(differ)} outputs"
        if differ:
            failures.append(f"torch's run: the graph after the pass differs at outputs {differ[:5]}")
        if steps:
            figures[f"{steps} optimizer steps vs eager"] = _compare_training(step, gm, steps, failures)
    result = PassVerification(name, model, steps, failures, figures, files, replay, round(time.time() - started, 1))
    if failures and raise_on_failure:
        raise PassVerificationError(result.summary())
    return result


def _computation(text):
    """The graph text without node metadata (`#{...}`): what the graph computes."""
    return "\n".join(line.split("  #{", 1)[0] for line in text.splitlines())


def _compare_training(step, gm, steps, failures):
    eager_history, eager_params = models.train(step, None, steps)
    graph_history, graph_params = models.train(step, gm, steps)
    for i, (a, b) in enumerate(zip(eager_history, graph_history)):
        differ = tools.bitwise_equal_lists(a, b)
        if differ:
            failures.append(f"optimizer step {i + 1}: loss/gradients differ from eager at outputs {differ[:5]}")
            return f"differ from step {i + 1}"
    if tools.bitwise_equal_lists(eager_params, graph_params):
        failures.append(f"after {steps} optimizer steps the parameters differ from eager training")
        return "parameters differ"
    return "bit for bit equal"


def _copy(gm):
    import copy
    return copy.deepcopy(gm)
