#!/usr/bin/python3
"""The FX bridge tests (CTest label fx; docs/verifying-a-python-pass.md).

  fx_suite.py --passcheck BIN roundtrip --shard I/N   make_fx joint graphs of the corpus
  fx_suite.py --passcheck BIN llama                   the Python llama3-debug-shaped model
  fx_suite.py --passcheck BIN upstream PASS           cse | dce | min-cut | default-partition
  fx_suite.py --passcheck BIN broken-cse              a wrong CSE is caught by equiv
  fx_suite.py --passcheck BIN export-errors           unmappable nodes are named
  fx_suite.py --passcheck BIN archive-errors          bad --inputs archives: exit 2 naming them
  fx_suite.py --passcheck BIN hostile-python          files and passes that would run code: refused or contained

roundtrip/llama: each graph is exported, run by `passcheck run --inputs` on the inputs
Python used, and every output equals Python eager bit for bit. upstream: PyTorch's own
pass runs on make_fx graphs; `passcheck equiv before after --inputs` must prove the
result equal. Each prints a summary line with its counts; exit 0 only when every check held.
"""
import argparse
import copy
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
# Python passes run by passcheck use this interpreter (the one with the build's torch).
os.environ.setdefault("PASSCHECK_PYTHON", sys.executable)
sys.path[:0] = [os.path.join(ROOT, "python"), os.path.join(ROOT, "python", "conformance"), HERE]

import torch  # noqa: E402
from torch.fx.experimental.proxy_tensor import make_fx  # noqa: E402

import make_fx_reference as corpus  # noqa: E402
import passcheck_fx  # noqa: E402

SEED = 0
# Programs whose graphs make_fx cannot give passcheck, with the reason (printed, counted).
failures = []


def fail(message):
    failures.append(message)
    print("FAIL " + message, flush=True)


def threads():
    """Python's intra-op thread count, for passcheck's --threads: some kernels split their
    reductions by thread (native_layer_norm_backward's and convolution_backward's weight
    gradients, batch norm's statistics), so their bits depend on it. (OMP_NUM_THREADS is
    no way to match the two: it also changes OpenBLAS's threads, and matrix products with
    them.)"""
    return str(torch.get_num_threads())


def passcheck(args, *cmd, expect=(0,)):
    proc = subprocess.run([args.passcheck, *cmd, "--threads", threads()], capture_output=True, text=True)
    if proc.returncode not in expect:
        return proc, False
    return proc, True


def corpus_cases():
    """(name, step, inputs) of every corpus program make_fx traces."""
    for program in corpus.parse_corpus(corpus.DEFAULT_CORPUS):
        yield program["name"], corpus.make_step(program), lambda p=program: corpus.example_inputs(p)


def trace(step, make_inputs):
    try:
        inputs = make_inputs()
        return make_fx(step)(*inputs)
    except Exception as error:  # data-dependent programs (masked_select) are refused by make_fx
        return f"make_fx refused: {type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"


def eager(step, inputs):
    torch.manual_seed(SEED)
    return step(*[t.detach().clone().requires_grad_(t.requires_grad) for t in inputs])


def roundtrip_one(args, tmp, name, step, make_inputs, kinds=None, strict=False):
    """True: passcheck equals eager; "graph-differs": passcheck equals PyTorch's run of
    the make_fx graph, which itself differs from eager (strict: a failure); None: make_fx
    refused the program; False: failed."""
    gm = trace(step, make_inputs)
    if isinstance(gm, str):
        print(f"skip {name}: {gm}")
        return None
    inputs = make_inputs()
    try:
        # Tensor constants (make_fx's _tensor_constant0) become trailing buffer inputs.
        text = passcheck_fx.export_graph(gm, kinds, example_inputs=inputs, lift_constants=True)
    except passcheck_fx.ExportError as error:
        fail(f"{name}: export: {error}")
        return False
    graph, archive, outputs = (os.path.join(tmp, f"{name}.{ext}") for ext in ("graph", "in.pt", "out.pt"))
    with open(graph, "w") as f:
        f.write(text)
    passcheck_fx.save_inputs(archive, inputs + passcheck_fx.lifted_constants(gm))
    proc, ok = passcheck(args, "run", graph, "--inputs", archive, "--save-outputs", outputs, "--seed", str(SEED))
    if not ok:
        fail(f"{name}: passcheck run exited {proc.returncode}: {proc.stderr.strip()[-600:]}")
        return False
    got, expected, graph_in_python = passcheck_fx.load_outputs(outputs), eager(step, inputs), eager(gm, inputs)
    if not len(got) == len(expected) == len(graph_in_python):
        fail(f"{name}: {len(got)} outputs from passcheck, {len(expected)} from eager")
        return False
    differ_from_eager = []
    for i, (a, b, c) in enumerate(zip(expected, graph_in_python, got)):
        if passcheck_fx.bitwise_equal(detached(a), c):
            continue
        if not passcheck_fx.bitwise_equal(detached(b), c):
            fail(f"{name}: output {i} differs from eager and from the same graph run by PyTorch")
            return False
        differ_from_eager.append(i)
    if differ_from_eager and strict:
        fail(f"{name}: outputs {differ_from_eager} differ from eager (passcheck equals PyTorch's run of the graph)")
        return False
    if differ_from_eager:
        # passcheck computes what PyTorch computes for this graph; the graph itself is not
        # the eager step (make_fx recorded a decomposition eager does not run).
        print(f"upstream {name}: outputs {differ_from_eager} of make_fx's graph differ from eager in PyTorch "
              "itself; passcheck equals PyTorch's run of the graph bit for bit")
        return "graph-differs"
    print(f"ok {name}: {len(got)} outputs bitwise equal to eager")
    return True


def detached(value):
    return value.detach() if isinstance(value, torch.Tensor) else value


def run_roundtrip(args, tmp):
    index, count = (int(x) for x in args.shard.split("/"))
    cases = [c for i, c in enumerate(corpus_cases()) if i % count == index]
    results = [roundtrip_one(args, tmp, *case) for case in cases]
    print(f"roundtrip shard {args.shard}: {results.count(True)} of {len(cases)} programs bitwise equal to eager, "
          f"{results.count('graph-differs')} equal to PyTorch's run of a make_fx graph that differs from eager, "
          f"{results.count(None)} refused by make_fx, {results.count(False)} failed")


def run_llama(args, tmp):
    """With F.silu (make_fx records silu's backward as a composite whose bits differ from
    eager's kernel: passcheck must equal PyTorch's run of that graph), and with the gate
    spelled x * sigmoid(x), where passcheck must equal eager itself."""
    import llama_debug
    for gate, strict in (("silu", False), ("sigmoid", True)):
        step, inputs, kinds = llama_debug.make_case(gate=gate)
        fresh = lambda inputs=inputs: [t.detach().clone().requires_grad_(t.requires_grad) for t in inputs]  # noqa: E731
        result = roundtrip_one(args, tmp, f"llama3_debug_{gate}", step, fresh, kinds, strict=strict)
        if result is None:
            fail(f"llama3_debug_{gate}: make_fx refused the model")


# ---- translation validation of upstream passes -------------------------------------------

def aot_joint(program):
    """(joint, inputs) in AOTAutograd's form, which functorch's partitioners expect:
    joint(primals, tangents) returns ((loss,), gradients), the backward seeded by the
    tangent placeholder (make_fx names them primals_i / tangents_i)."""
    names = [i["name"] for i in program["inputs"]]

    def forward(primals):
        env = dict(zip(names, primals))
        for op in program["ops"]:
            if op["nograd"]:
                with torch.no_grad():
                    corpus.call(op, env)
            else:
                corpus.call(op, env)
        floats = [env[n] for n in program["outputs"] if env[n].is_floating_point()]
        loss = floats[0].sum()
        for t in floats[1:]:
            loss = loss + t.sum()
        return loss

    def joint(primals, tangents):
        loss = forward(primals)
        wrt = [t for t, spec in zip(primals, program["inputs"]) if spec["grad"]]
        return (loss,), torch.autograd.grad(loss, wrt, tangents)

    return joint, lambda: (corpus.example_inputs(program), [torch.ones(())])


def equiv(args, tmp, name, before_text, after_text, inputs, expect):
    before, after, archive = (os.path.join(tmp, f"{name}.{x}") for x in ("before.graph", "after.graph", "in.pt"))
    for path, text in ((before, before_text), (after, after_text)):
        with open(path, "w") as f:
            f.write(text)
    passcheck_fx.save_inputs(archive, inputs)
    proc = subprocess.run([args.passcheck, "equiv", before, after, "--inputs", archive, "--seed", str(SEED),
                           "--threads", threads()], capture_output=True, text=True)
    return proc.returncode, proc.stdout + proc.stderr


# Wrong results the pinned torch's own passes produce on corpus graphs. The test requires
# equiv to keep reporting each one as DIFFERENT (exit 1); any other difference fails it.
# None with torch 2.15: the findings of torch 1.13 on these graphs (CSEPass merging the
# two where() of the minimum/maximum backward that two masked_fill_ then wrote; dead-code
# elimination, and with it both partitioners, dropping a buffer's in-place update) are
# gone: 2.15's make_fx records that backward without in-place writes, and its
# eliminate_dead_code keeps in-place updates of inputs (docs/verifying-a-python-pass.md).
UPSTREAM_FINDINGS = {}


def apply_upstream(pass_name, gm, inputs):
    """(after text, changed) of PyTorch's own pass on a copy of gm."""
    from torch.fx.passes.dialect.common.cse_pass import CSEPass, get_CSE_banned_ops
    before_nodes = len(gm.graph.nodes)
    if pass_name == "cse":
        out = CSEPass(banned_ops=get_CSE_banned_ops())(copy.deepcopy(gm)).graph_module
        return export(out, inputs), len(out.graph.nodes) != before_nodes
    if pass_name == "dce":
        out = copy.deepcopy(gm)
        changed = out.graph.eliminate_dead_code()
        out.recompile()
        return export(out, inputs), bool(changed)
    if passcheck_fx.lifted_constants(gm):
        raise SkipGraph("a tensor constant (get_attr): the module form has no lifted inputs")
    from functorch.compile import default_partition, min_cut_rematerialization_partition
    partition = min_cut_rematerialization_partition if pass_name == "min-cut" else default_partition
    forward, backward = passcheck_fx.partition_joint(gm, partition, 1, inputs)
    return passcheck_fx.export_partitioned(gm, forward, backward, 1, example_inputs=inputs), True


class SkipGraph(Exception):
    pass


def export(gm, inputs):
    return passcheck_fx.export_graph(gm, example_inputs=inputs, lift_constants=True)


def upstream_graphs(pass_name):
    """(name, make_fx graph, inputs) the pass is tried on, the programs of known findings
    first. Partitioners take AOTAutograd-form joints (primals, tangents); CSE and DCE
    both forms (the step form as `name`, the AOT form as `name.aot`) and the Python
    llama3-debug model."""
    programs = corpus.parse_corpus(corpus.DEFAULT_CORPUS)
    known = {name for (p, name) in UPSTREAM_FINDINGS if p == pass_name}
    programs.sort(key=lambda program: program["name"] not in known)
    partitioner = pass_name in ("min-cut", "default-partition")
    for program in programs:
        forms = [] if partitioner else [(program["name"], corpus.make_step(program),
                                         lambda program=program: corpus.example_inputs(program))]
        joint, make_joint_inputs = aot_joint(program)
        forms.append((program["name"] + ("" if partitioner else ".aot"), joint,
                      lambda make=make_joint_inputs: [t for group in make() for t in group]))
        for name, fn, make_inputs in forms:
            gm = trace(fn, make_joint_inputs if fn is joint else make_inputs)
            if not isinstance(gm, str):
                yield name, gm, make_inputs()
    if not partitioner:
        import llama_debug
        for gate in ("silu", "sigmoid"):
            step, inputs, _ = llama_debug.make_case(gate=gate)
            yield f"llama3_debug_{gate}", make_fx(step)(*inputs), inputs


def run_upstream(args, tmp):
    """Exports each graph before and after the pass and has `passcheck equiv` compare
    them; a graph the pass left unchanged is counted but not run. Stops after --limit
    verified changed graphs (the known findings are always run)."""
    verified = unchanged = findings = 0
    for name, gm, inputs in upstream_graphs(args.pass_name):
        finding = UPSTREAM_FINDINGS.get((args.pass_name, name))
        if args.limit and verified >= args.limit and not finding:
            break
        try:
            before = export(gm, inputs)
            after, changed = apply_upstream(args.pass_name, gm, inputs)
        except passcheck_fx.ExportError as error:
            fail(f"{name}: export: {error}")
            continue
        except SkipGraph as why:
            print(f"skip {name}: {why}")
            continue
        except Exception as error:  # the upstream pass itself refused the graph
            print(f"skip {name}: {args.pass_name} raised {type(error).__name__}: {str(error).splitlines()[0][:200]}")
            continue
        if not changed and not finding:
            unchanged += 1
            continue
        rc, out = equiv(args, tmp, name, before, after, inputs + passcheck_fx.lifted_constants(gm), 0)
        if finding:
            if rc == 1 and "DIFFERENT" in out:
                findings += 1
                print(f"upstream bug {name}: {args.pass_name}: equiv exits 1 as expected: {finding}\n"
                      + "\n".join("    " + line for line in out.splitlines() if "DIFFER" in line))
            else:
                fail(f"{name}: known {args.pass_name} finding no longer reported (equiv exited {rc}): {finding}")
        elif rc == 0:
            verified += 1
            print(f"ok {name}: {args.pass_name} changed the graph; equivalent")
        else:
            fail(f"{name}: {args.pass_name}: passcheck equiv exited {rc}:\n{out.strip()[-1500:]}")
    print(f"upstream {args.pass_name}: verified on {verified} changed graphs ({unchanged} left unchanged, "
          f"not run), {findings} known upstream bug(s) caught, {len(failures)} failed")
    if verified < 10:
        fail(f"{args.pass_name}: verified on only {verified} changed graphs (need 10)")


# ---- a wrong CSE and unmappable graphs ---------------------------------------------------

def broken_cse(gm, key):
    """A CSE that merges nodes whose key(node) is equal: with a key that ignores what the
    real pass compares, it merges nodes that compute different values."""
    seen, changed = {}, False
    for node in list(gm.graph.nodes):
        if node.op != "call_function":
            continue
        k = key(node)
        if k in seen:
            node.replace_all_uses_with(seen[k])
            gm.graph.erase_node(node)
            changed = True
        else:
            seen[k] = node
    gm.recompile()
    return changed


def run_broken_cse(args, tmp):
    def twice_random(x):
        return torch.rand_like(x) * x + torch.rand_like(x)

    def two_scalings(x):
        return (x * 2.0).sum() + (x * 3.0).sum()

    ignores_scalars = lambda n: (n.target, tuple(a for a in n.args if isinstance(a, torch.fx.Node)))  # noqa: E731
    merges_random = lambda n: (n.target, tuple(map(str, n.args)))  # noqa: E731
    caught = 0
    for name, fn, key in (("merges_random_ops", twice_random, merges_random),
                          ("ignores_scalar_args", two_scalings, ignores_scalars)):
        inputs = [torch.randn(4, 3, generator=torch.Generator().manual_seed(1))]
        gm = make_fx(fn)(*inputs)
        before = passcheck_fx.export_graph(gm, example_inputs=inputs)
        if not broken_cse(gm, key):
            fail(f"{name}: the broken CSE changed nothing, so the test shows nothing")
            continue
        rc, out = equiv(args, tmp, name, before, passcheck_fx.export_graph(gm, example_inputs=inputs), inputs, 1)
        if rc == 1 and "DIFFERENT" in out:
            caught += 1
            print(f"ok {name}: equiv exited 1 (DIFFERENT)")
        else:
            fail(f"{name}: equiv exited {rc}, expected 1:\n{out.strip()[-800:]}")
    # Upstream's CSEPass itself: with its default (no banned ops) it merges two rand_like;
    # with get_CSE_banned_ops() it still merges two dropouts, whose make_fx form draws
    # with the in-place bernoulli_, which the ban list (aten.bernoulli only) misses.
    from torch.fx.passes.dialect.common.cse_pass import CSEPass, get_CSE_banned_ops

    def two_dropouts(x):
        return torch.nn.functional.dropout(x, 0.5) + torch.nn.functional.dropout(x, 0.5)

    for name, fn, banned in (("cse_default_banned_ops", twice_random, None),
                             ("cse_banned_ops_two_dropouts", two_dropouts, get_CSE_banned_ops())):
        inputs = [torch.randn(4, 3)]
        gm = make_fx(fn)(*inputs)
        before = passcheck_fx.export_graph(gm, example_inputs=inputs)
        after = passcheck_fx.export_graph(CSEPass(banned)(gm).graph_module, example_inputs=inputs)
        rc, out = equiv(args, tmp, name, before, after, inputs, 1)
        if rc == 1 and "DIFFERENT" in out:
            caught += 1
            print(f"ok upstream CSEPass ({name}): equiv exited 1 (DIFFERENT)")
        else:
            fail(f"upstream CSEPass ({name}) was not caught: equiv exited {rc}:\n{out.strip()[-800:]}")
    print(f"broken-cse: {caught} of 4 wrong variants caught")



def expect_export_errors(cases):
    """Each (what, gm, node) must fail to export with an ExportError naming the node."""
    for what, gm, expected_node in cases:
        try:
            passcheck_fx.export_graph(gm)
            fail(f"{what}: exported without an error")
        except passcheck_fx.ExportError as error:
            if f"'{expected_node}'" in str(error):
                print(f"ok {what}: {error}")
            else:
                fail(f"{what}: the error does not name node '{expected_node}': {error}")
        except Exception as error:  # noqa: BLE001
            fail(f"{what}: {type(error).__name__} instead of ExportError: {error}")

def run_export_errors(args, tmp):
    def f(x):
        return torch.relu(x) + 1

    cases = [("a torch-level call (symbolic_trace)", torch.fx.symbolic_trace(f), "relu"),
             ("a get_attr constant", make_fx(lambda x: x + torch.tensor([1.0, 2.0, 3.0]))(torch.randn(2, 3)),
              "_tensor_constant0")]
    expect_export_errors(cases)
    # A Tensor[] result without meta['val'] (graph_trainer's chunk pass creates its
    # split_with_sizes so, typing only the getitems): counted from split_sizes and typed from
    # the getitems, and the text runs bit for bit; where the count or a type cannot be known,
    # an ExportError naming the node.
    def untyped(fn, *inputs, op=torch.ops.aten.split_with_sizes.default):
        gm = make_fx(fn)(*inputs)
        node = next(n for n in gm.graph.nodes if n.target is op)
        del node.meta["val"]
        return gm, node

    x = torch.randn(2, 6)
    gm, _ = untyped(lambda t: [p * 2.0 for p in torch.split(t, [2, 4], 1)], x)
    try:
        text = passcheck_fx.export_graph(gm)
        graph, inputs, outputs = (os.path.join(tmp, name) for name in ("split.graph", "split_in.pt", "split_out.pt"))
        with open(graph, "w") as f:
            f.write(text)
        passcheck_fx.save_inputs(inputs, [x])
        proc, ok = passcheck(args, "run", graph, "--inputs", inputs, "--save-outputs", outputs)
        same = ok and all(passcheck_fx.bitwise_equal(a, b) for a, b in
                          zip(passcheck_fx.load_outputs(outputs), [p * 2.0 for p in torch.split(x, [2, 4], 1)]))
        if same:
            print("ok split_with_sizes without meta['val']: typed from its getitems, runs bit for bit")
        else:
            fail(f"split_with_sizes without meta['val']: passcheck run exited {proc.returncode} "
                 f"({proc.stderr.strip()[-300:]}) or outputs differ; text:\n{text}")
    except Exception as error:  # noqa: BLE001 - the regression: IndexError here
        fail(f"split_with_sizes without meta['val']: {type(error).__name__}: {error}")
    unbound, unbind = untyped(lambda t: torch.unbind(t)[0] + 1.0, x, op=torch.ops.aten.unbind.int)
    with unbound.graph.inserting_after(unbind):
        unbound.graph.call_function(torch.ops.aten.cat.default, (unbind,))  # the list also read whole
    partly_used, partly_used_split = untyped(lambda t: torch.split(t, [2, 4], 1)[0] * 2.0, x)
    for getitem in [u for u in partly_used_split.users if not u.users]:  # make_fx's unused getitem_1
        partly_used.graph.erase_node(getitem)
    unknown = [("a split result without meta['val'] whose unused slot has no type", partly_used,
                partly_used_split.name),
               ("an unbind result without meta['val'] read other than through getitem", unbound, unbind.name)]
    expect_export_errors(unknown)
    # Node metadata in PyTorch 2.x's spellings maps to passcheck's keys, and the text runs.
    import enum

    class CheckpointPolicy(enum.Enum):  # torch.utils.checkpoint.CheckpointPolicy's names
        PREFER_RECOMPUTE = 3

    x = torch.randn(2, 3)
    gm = make_fx(lambda t: torch.relu(t * 2.0))(x)
    mul, relu = [n for n in gm.graph.nodes if n.op == "call_function"]
    mul.meta.update(seq_nr=4, ac_graph_id=1, recompute=CheckpointPolicy.PREFER_RECOMPUTE, custom={"k": "v"},
                    nn_module_stack={"L__self___layers_0": ("L['self'].layers.0", torch.nn.Linear)})
    relu.meta.update(partitioner_tag="is_backward")
    placeholder = next(n.name for n in gm.graph.nodes if n.op == "placeholder")
    text = passcheck_fx.export_graph(gm, {placeholder: "param"})
    wanted = ['#{fqn="layers.0", seq=4, recompute=prefer_recompute, ac_region=1, custom={"k": "v"}}',
              "#{phase=backward}", f"param %{placeholder} : f32[2, 3]"]
    graph = os.path.join(tmp, "meta.graph")
    with open(graph, "w") as f:
        f.write(text)
    proc, ok = passcheck(args, "run", graph)
    if all(w in text for w in wanted) and ok:
        print("ok node metadata: fqn, seq, recompute, ac_region, custom, phase mapped; passcheck runs it")
    else:
        fail(f"node metadata: passcheck run exited {proc.returncode} ({proc.stderr.strip()}); text:\n{text}")
    # The command line: exit 2 and the node's name on stderr.
    saved = os.path.join(tmp, "traced.pt")
    torch.save(cases[0][1], saved)
    proc = subprocess.run([sys.executable, "-m", "passcheck_fx", "export", saved, "--allow-pickle",
                           "-o", os.path.join(tmp, "x.graph")],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": os.path.join(ROOT, "python")})
    if proc.returncode == 2 and "'relu'" in proc.stderr:
        print(f"ok CLI: exit 2: {proc.stderr.strip()}")
    else:
        fail(f"CLI: exit {proc.returncode}, stderr {proc.stderr.strip()[-400:]}")


def metadata_lines(text):
    """node name -> its #{...} metadata, from exported graph text."""
    out = {}
    for line in text.splitlines():
        if " = " in line and "  #{" in line:
            name = line.split(" = ")[0].split(":")[0].split(",")[0].strip().lstrip("%")
            out[name] = line[line.index("  #{") + 2:]
    return out


def run_metadata_roundtrip(args, tmp):
    """Node metadata survives the bridge's round trips, in the keys Python passes use:
    make_fx graph (PyTorch's keys) -> passcheck text -> export-python's GraphModule, whose
    PyTorch keys must match the original's -> text again, equal line for line; and a
    Python pass's edits of those keys (a new policy, a removed one, a changed custom key)
    are what the exporter reads back."""
    import importlib.util
    from torch.utils.checkpoint import CheckpointPolicy

    x = torch.randn(2, 3)
    gm = make_fx(lambda t: torch.relu(t * 2.0).sum() + t.mean())(x)
    calls = [n for n in gm.graph.nodes if n.op == "call_function"]
    stack = {"L__self___layers_0": ("L['self'].layers.0", torch.nn.Linear)}
    calls[0].meta.update(seq_nr=4, ac_graph_id=1, recompute=CheckpointPolicy.PREFER_RECOMPUTE,
                         custom={"k": "v", "module_fqn": "layers.0"}, nn_module_stack=stack)
    calls[1].meta.update(recompute=CheckpointPolicy.MUST_SAVE, ac_graph_id=1, custom={"tag": "x"})
    calls[-1].meta.update(partitioner_tag="is_backward", seq_nr=9)
    placeholder = next(n.name for n in gm.graph.nodes if n.op == "placeholder")
    text = passcheck_fx.export_graph(gm, {placeholder: "arg"})
    graph, module = os.path.join(tmp, "meta.graph"), os.path.join(tmp, "meta_module.py")
    with open(graph, "w") as f:
        f.write(text)
    proc = subprocess.run([args.passcheck, "export-python", graph, "-o", module], capture_output=True, text=True)
    if proc.returncode != 0:
        fail(f"metadata: export-python exited {proc.returncode}: {proc.stderr.strip()[-400:]}")
        return
    spec = importlib.util.spec_from_file_location("meta_module", module)
    written = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(written)
    back = written.build()
    by_name = {n.name: n for n in back.graph.nodes}

    def pytorch_keys(node):
        m = node.meta
        recompute = m.get("recompute")
        return {"recompute": getattr(recompute, "name", recompute), "ac_graph_id": m.get("ac_graph_id"),
                "custom": m.get("custom"), "seq_nr": m.get("seq_nr"),
                "fqn": passcheck_fx.exporter._module_fqn(m.get("nn_module_stack")),
                "backward": m.get("partitioner_tag") == "is_backward"}

    mismatches = []
    for node in calls:
        if node.name not in by_name:
            mismatches.append(f"{node.name}: missing from the written module")
            continue
        want, got = pytorch_keys(node), pytorch_keys(by_name[node.name])
        for key in want:
            if want[key] != got[key] and not (key == "fqn" and want[key] is None):
                mismatches.append(f"{node.name}: meta {key} {want[key]!r} came back as {got[key]!r}")
    again = passcheck_fx.export_graph(back)
    if metadata_lines(again) != metadata_lines(text):
        mismatches.append(f"text after the round trip differs in metadata:\n{text}\n---\n{again}")
    # A Python pass edits PyTorch's keys; the exporter must read its edits back.
    by_name[calls[0].name].meta["recompute"] = CheckpointPolicy.MUST_SAVE
    del by_name[calls[1].name].meta["recompute"]
    by_name[calls[1].name].meta["custom"] = {"tag": "y"}
    edited = metadata_lines(passcheck_fx.export_graph(back))
    if "recompute=must_save" not in edited.get(calls[0].name, ""):
        mismatches.append(f"{calls[0].name}: a pass's new policy was not read back: {edited.get(calls[0].name)}")
    if "recompute=" in edited.get(calls[1].name, "") or '"tag": "y"' not in edited.get(calls[1].name, ""):
        mismatches.append(f"{calls[1].name}: a pass's removed policy or changed custom key was not read back: "
                          f"{edited.get(calls[1].name)}")
    if mismatches:
        fail("metadata round trip:\n  " + "\n  ".join(mismatches))
    else:
        print(f"ok metadata round trip: recompute, ac_region, custom, seq, fqn and phase of {len(calls)} nodes "
              "survive text -> Python -> text, and a Python pass's edits come back")


def run_archive_errors(args, tmp):
    """`run --inputs` / `equiv --inputs` refuse a bad archive with exit 2 and a message
    naming the file (and the input), never a crash; `--save-outputs` round-trips."""
    import random
    graph = os.path.join(tmp, "mm.graph")
    with open(graph, "w") as f:
        f.write("graph(\n    arg %a : f32[3, 4],\n    arg %w : f32[5, 4]):\n"
                "  %t : f32[4, 5]{1, 4} = aten::t(%w)\n  %mm : f32[3, 5] = aten::mm(%a, %t)\n  return (%mm)\n")
    good = os.path.join(tmp, "good.pt")
    a, w = torch.randn(3, 4), torch.randn(5, 4)
    passcheck_fx.save_inputs(good, [a, w])
    cases = {"truncated": open(good, "rb").read()[:200], "not an archive": b"hello\n", "empty": b""}
    files = {}
    for what, data in cases.items():
        files[what] = os.path.join(tmp, what.replace(" ", "_") + ".pt")
        with open(files[what], "wb") as f:
            f.write(data)
    for what, values, expected in (("count", [a], "holds 1 inputs, the graph takes 2"),
                                   ("dtype", [a.double(), w], "input 0 (%a): dtype f64 in the archive, f32 in the graph"),
                                   ("shape", [a, w[:, :3]], "input 1 (%w): shape [5, 3] in the archive, [5, 4] in the graph"),
                                   ("kind", [3, w], "input 0 (%a): the archive holds an int, the graph declares a tensor")):
        files[what] = os.path.join(tmp, what + ".pt")
        passcheck_fx.save_inputs(files[what], values)
        cases[what] = expected
    for what, path in files.items():
        for command in (["run", graph], ["equiv", graph, graph]):
            proc, _ = passcheck(args, *command, "--inputs", path)
            expected = cases[what] if isinstance(cases[what], str) else "not a torch.save archive"
            if proc.returncode == 2 and path in proc.stderr and expected in proc.stderr:
                print(f"ok {command[0]} --inputs {what}: {proc.stderr.strip()}")
            else:
                fail(f"{command[0]} --inputs {what}: exit {proc.returncode}, stderr {proc.stderr.strip()[-300:]}")
    # Corrupted bytes anywhere: an answer (0 or 2), never a signal.
    rng, data = random.Random(7), bytearray(open(good, "rb").read())
    corrupt = os.path.join(tmp, "corrupt.pt")
    for i in range(20):
        b = bytearray(data)
        for _ in range(8):
            b[rng.randrange(len(b))] = rng.randrange(256)
        with open(corrupt, "wb") as f:
            f.write(b if i % 2 else b[:rng.randrange(len(b))])
        proc, _ = passcheck(args, "run", graph, "--inputs", corrupt)
        if proc.returncode not in (0, 2):
            fail(f"corrupted archive {i}: exit {proc.returncode}: {proc.stderr.strip()[-300:]}")
    # Outputs come back bit for bit, and strides of the archive are laid out as declared.
    out = os.path.join(tmp, "out.pt")
    strided = os.path.join(tmp, "strided.pt")
    torch.save((a.t().contiguous().t(), w), strided)
    for path in (good, strided):
        proc, ok = passcheck(args, "run", graph, "--inputs", path, "--save-outputs", out)
        if not ok or not passcheck_fx.bitwise_equal(passcheck_fx.load_outputs(out)[0], torch.mm(a, w.t())):
            fail(f"run --inputs {os.path.basename(path)} --save-outputs: exit {proc.returncode}, or outputs differ")
        else:
            print(f"ok run --inputs {os.path.basename(path)} --save-outputs: bitwise equal to torch.mm")
    print(f"archive-errors: {len(failures)} failed")


# Python passes that misbehave the way an untrusted pass (or a pass named by an untrusted
# repro file) may: written into the test's scratch directory, imported by passcheck's worker.
HOSTILE_PASSES = {
    "exits_at_import": "import sys\nsys.exit(3)\ndef f(gm):\n    return gm\n",
    "os_exit_at_import": "import os\nos._exit(0)\ndef f(gm):\n    return gm\n",
    "interrupts_at_import": "raise KeyboardInterrupt('at import')\ndef f(gm):\n    return gm\n",
    "hangs_at_import": "import time\ntime.sleep(3600)\ndef f(gm):\n    return gm\n",
    # Double-forks a `sleep 300` daemon (setsid: it leaves every process group) per call,
    # writing its pid to $HOSTILE_PIDS.
    "daemon": (
        "import os, sys\n"
        "def spawn():\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        "        os.setsid()\n"
        "        if os.fork() == 0:\n"
        "            with open(os.environ['HOSTILE_PIDS'], 'a') as f:\n"
        "                f.write('%d\\n' % os.getpid())\n"
        "            os.execvp('sleep', ['sleep', '300'])\n"
        "        os._exit(0)\n"
        "    os.waitpid(pid, 0)\n"
        "def f(gm):\n"
        "    spawn()\n"
        "    return gm\n"
        "def f_unguarded(gm):\n"
        "    # the worker's own clean-up disabled: only passcheck's subreaper is left to find it\n"
        "    sys.modules['__main__'].kill_descendants = lambda: None\n"
        "    spawn()\n"
        "    return gm\n"),
    # Leaves a marker when imported (so a test sees whether it ran) and breaks every case.
    "marks_import": (
        "import os\n"
        "open(os.environ['HOSTILE_MARKER'], 'w').close()\n"
        "def f(gm):\n"
        "    raise ValueError('broken on purpose')\n"),
}


def run_hostile_python(args, tmp):
    """Nothing a file or a pass chooses runs unasked, and nothing a pass starts outlives
    passcheck: a code-running pickle is refused by `python3 -m passcheck_fx export`
    (GraphModules need --allow-pickle); a pass whose import raises SystemExit or
    KeyboardInterrupt, ends the process or hangs is exit 2 naming the module, the hang
    bounded by --timeout-ms; a daemon a pass double-forks is dead when `fuzz` returns; a
    repro file naming a Python pass is refused by `repro`/`minimize` without
    --allow-python, before anything runs; empty and out-of-range options are exit 2
    naming the option."""
    import time
    passes = os.path.join(tmp, "passes")
    os.makedirs(passes)
    for name, text in HOSTILE_PASSES.items():
        with open(os.path.join(passes, name + ".py"), "w") as f:
            f.write(text)
    pids, marker = os.path.join(tmp, "daemon.pids"), os.path.join(tmp, "imported")
    env = {**os.environ, "PYTHONPATH": os.path.join(ROOT, "python"), "HOSTILE_PIDS": pids, "HOSTILE_MARKER": marker}

    def cli(cmd, timeout=240):
        started = time.time()
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
        return proc, time.time() - started

    def check(what, ok, proc):
        if ok:
            print(f"ok {what}")
        else:
            fail(f"{what}: exit {proc.returncode}\n  stdout: {proc.stdout.strip()[-600:]}\n"
                 f"  stderr: {proc.stderr.strip()[-1200:]}")

    def fuzz(spec, *extra):
        return cli([args.passcheck, "fuzz", "--python-pass", spec, "--python-path", passes,
                    "--out", os.path.join(tmp, "repros-" + spec.replace(":", "-")), *extra])

    # 1. export: a pickle that would run a command, a GraphModule without --allow-pickle.
    pwned = os.path.join(tmp, "pwned")

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {pwned}",))

    evil, gm_file, inputs = (os.path.join(tmp, n) for n in ("evil.pt", "gm.pt", "in.pt"))
    torch.save({"weights": Evil()}, evil)
    x = torch.randn(3)
    torch.save(make_fx(lambda t: torch.relu(t) * 2.0)(x), gm_file)
    passcheck_fx.save_inputs(inputs, [x])
    export = [sys.executable, "-m", "passcheck_fx", "export"]
    for what, cmd in (("export of a code-running pickle", export + [evil]),
                      ("export of it as --inputs", export + [gm_file, "--allow-pickle", "--inputs", evil])):
        proc, _ = cli(cmd)
        one_line = len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
        check(f"{what}: exit 2, one line, nothing run", proc.returncode == 2 and one_line and not os.path.exists(pwned)
              and evil in proc.stderr, proc)
    proc, _ = cli(export + [gm_file])
    check("export of a GraphModule without --allow-pickle: exit 2 naming the file and the flag",
          proc.returncode == 2 and gm_file in proc.stderr and "--allow-pickle" in proc.stderr
          and "Traceback" not in proc.stderr, proc)
    proc, _ = cli(export + [gm_file, "--allow-pickle", "--inputs", inputs])
    check("export of it with --allow-pickle: exit 0, graph text", proc.returncode == 0 and "aten::relu" in proc.stdout,
          proc)
    for what, cmd in (("a missing file", export + [os.path.join(tmp, "nope.pt")]),
                      ("a malformed --kinds", export + [gm_file, "--allow-pickle", "--kinds", "x"]),
                      ("an unknown option", export + [gm_file, "--no-such-option"])):
        proc, _ = cli(cmd)
        check(f"export with {what}: exit 2, no traceback", proc.returncode == 2 and "Traceback" not in proc.stderr, proc)

    # 2. imports that raise SystemExit / KeyboardInterrupt, end the process, or hang.
    for module, words in (("exits_at_import", "SystemExit: 3"), ("interrupts_at_import", "KeyboardInterrupt"),
                          ("os_exit_at_import", "ended with exit 0")):
        proc, _ = fuzz(module + ":f", "--cases", "2")
        check(f"a pass whose import ends in {words}: exit 2 naming the module", proc.returncode == 2 and f"'{module}'" in
              proc.stderr and words in proc.stderr and "Traceback" not in proc.stderr, proc)
    proc, seconds = fuzz("hangs_at_import:f", "--cases", "2", "--timeout-ms", "4000")
    check(f"a pass whose import hangs: exit 2 within --timeout-ms 4000 ({seconds:.1f} s)",
          proc.returncode == 2 and "'hangs_at_import'" in proc.stderr and "4000 ms" in proc.stderr and seconds < 60, proc)
    proc, _ = cli([sys.executable, "-m", "passcheck_fx", "verify-pass", "exits_at_import:f", "--python-path", passes])
    check("verify-pass of a pass whose import raises SystemExit: exit 2, no traceback",
          proc.returncode == 2 and "Traceback" not in proc.stderr, proc)

    # 3. daemons: dead when fuzz returns (the worker's clean-up, and passcheck's alone).
    def alive(pid):
        try:
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
            with open(f"/proc/{pid}/cmdline") as f:
                return state not in ("Z", "X") and f.read().startswith("sleep")
        except OSError:
            return False

    for function, isolation in (("f", "persistent"), ("f_unguarded", "persistent"), ("f_unguarded", "fork-server")):
        if os.path.exists(pids):
            os.remove(pids)
        proc, _ = fuzz("daemon:" + function, "--cases", "2", "--isolation", isolation)
        started = [int(line) for line in open(pids)] if os.path.exists(pids) else []
        left = [p for p in started if alive(p)]  # at once: passcheck waits until its strays are dead
        for p in left:
            os.kill(p, 9)
        check(f"daemon:{function} ({isolation}): {len(started)} daemons started, none left after fuzz",
              proc.returncode == 0 and len(started) == 2 and not left, proc)

    # 4. repro files naming a Python pass: refused without --allow-python, run with it.
    proc, _ = fuzz("marks_import:f", "--cases", "1", "--no-minimize")
    repros = [os.path.join(d, r) for d in [os.path.join(tmp, "repros-marks_import-f")] if os.path.isdir(d)
              for r in os.listdir(d) if r.endswith(".repro")]
    check("a broken pass leaves a repro", proc.returncode == 1 and len(repros) == 1, proc)
    if repros:
        for command in (["repro"], ["minimize", "--out", os.path.join(tmp, "min.repro"), "--seconds", "5"]):
            os.remove(marker) if os.path.exists(marker) else None
            proc, _ = cli([args.passcheck, *command, repros[0]])
            named = all(w in proc.stderr for w in (repros[0], "'marks_import'", passes, "--allow-python"))
            check(f"{command[0]} of it without --allow-python: exit 2 naming file, module, directory and flag; "
                  f"nothing imported", proc.returncode == 2 and named and not os.path.exists(marker), proc)
        proc, _ = cli([args.passcheck, "repro", "--allow-python", repros[0]])
        check("repro of it with --allow-python: the failure replays (exit 1)",
              proc.returncode == 1 and os.path.exists(marker) and "verdict: FAILS" in proc.stdout, proc)

    # 5. options: empty values and numbers out of range are exit 2 naming the option.
    for option, value in (("--python-pass", ""), ("--pipeline", ""), ("--out", ""), ("--seed", "1e23"),
                          ("--seed", "-1"), ("--cases", "1e20"), ("--cases", "99999999999999999999"),
                          ("--seconds", "1e300"), ("--seconds", "nan"), ("--timeout-ms", "1e30")):
        proc, _ = cli([args.passcheck, "fuzz", option, value, "--out" if option != "--out" else "--cases",
                       os.path.join(tmp, "o") if option != "--out" else "1"])
        check(f"fuzz {option} '{value}': exit 2 naming it", proc.returncode == 2 and option in proc.stderr, proc)
    print(f"hostile-python: {len(failures)} failed")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--passcheck", required=True)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("roundtrip").add_argument("--shard", default="0/1")
    sub.add_parser("llama")
    up = sub.add_parser("upstream")
    up.add_argument("pass_name", choices=["cse", "dce", "min-cut", "default-partition"])
    up.add_argument("--limit", type=int, default=0, help="stop after this many verified graphs (0: all)")
    sub.add_parser("broken-cse")
    sub.add_parser("export-errors")
    sub.add_parser("archive-errors")
    sub.add_parser("hostile-python")
    sub.add_parser("metadata-roundtrip")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="passcheck-fx-") as tmp:
        {"roundtrip": run_roundtrip, "llama": run_llama, "upstream": run_upstream, "broken-cse": run_broken_cse,
         "export-errors": run_export_errors, "archive-errors": run_archive_errors,
         "hostile-python": run_hostile_python, "metadata-roundtrip": run_metadata_roundtrip}[args.command](args, tmp)
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
