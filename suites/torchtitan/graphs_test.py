"""torchtitan's debug models traced by graph_trainer's own tracer, exported to passcheck:
passcheck's executor computes the same bits as torch's run of the same graph (loss and
every gradient), the export keeps torchtitan's metadata (module FQNs, backward nodes),
and training driven by the traced graph equals eager training over 5 optimizer steps.

    graphs_test.py PASSCHECK MODEL..."""
import operator
import os
import sys
import tempfile
import time

import support
from passcheck_fx import load_outputs
from passcheck_fx.titan import models, tools

passcheck = support.passcheck_binary()
for name in sys.argv[2:] or models.MODELS:
    started = time.time()
    step = models.trace_step(name)
    work = tempfile.mkdtemp(prefix=f"titan-{name}-")
    graph = tools.export(step.gm, os.path.join(work, "step.graph"), step.kinds())
    inputs = tools.save(os.path.join(work, "inputs.pt"), step.flat_inputs())
    outputs = os.path.join(work, "outputs.pt")
    tools.call(passcheck, ["run", graph, "--inputs", inputs, "--save-outputs", outputs, "--threads", tools.threads()])
    ours, theirs = load_outputs(outputs), models.run_graph(step)
    differ = tools.bitwise_equal_lists(ours, theirs)
    support.check(not differ, f"{name}: passcheck's run differs from torch's at outputs {differ[:5]} "
                              f"(replay: {passcheck} run {graph} --inputs {inputs})")
    text = open(graph).read()
    # Multi-output nodes are one line with their getitems folded in.
    backward = sum(1 for n in step.gm.graph.nodes if n.meta.get("autograd_backward") and n.target is not operator.getitem)
    support.check(text.count("phase=backward") == backward,
                  f"{name}: {backward} backward nodes in the graph, {text.count('phase=backward')} exported as such")
    support.check('fqn="layers.0.' in text and '"module_fqn": "loss"' in text,
                  f"{name}: the export lost torchtitan's module FQN annotations")
    eager, eager_params = models.train(step, None, 5)
    traced, traced_params = models.train(step, step.gm, 5)
    for i, (a, b) in enumerate(zip(eager, traced)):
        differ = tools.bitwise_equal_lists(a, b)
        support.check(not differ, f"{name}: step {i + 1}: traced differs from eager at outputs {differ[:5]}")
    support.check(not tools.bitwise_equal_lists(eager_params, traced_params),
                  f"{name}: parameters after 5 steps differ between traced and eager")
    support.show(f"{name}: verified in {time.time() - started:.1f} s", {
        "graph nodes": len(step.gm.graph.nodes), "backward nodes": backward, "outputs compared": len(ours),
        "passcheck run == torch run": "bit for bit", "traced == eager over 5 AdamW steps": "bit for bit"})
