"""Writer round trip: passcheck graphs (traced models and generated fuzz cases) written as
Python by `passcheck export-python` rebuild a torch.fx GraphModule that, run by Debian's
torch on the inputs passcheck generated, returns bit for bit what passcheck's executor
returned; every node's recorded tensor_meta matches what it computes; the placeholders
carry their input kinds. dropout_mlp draws random numbers, so only its structure is
compared. Usage: roundtrip_test.py [PASSCHECK_BINARY]."""
import importlib.util
import os
import sys
import tempfile

import torch
import torch.fx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import support  # noqa: E402


def load_archive(path):
    """An archive passcheck wrote (LibTorch tags typed lists with restore_type_tag, the
    one global allowed here; everything else loads as weights only)."""
    import torch.jit._pickle
    with torch.serialization.safe_globals([torch.jit._pickle.restore_type_tag]):
        return torch.load(path, weights_only=True)

TRACED = [
    ("mlp", []),
    ("two_matmul", []),
    ("llama3", ["--layers", "1", "--seq", "16", "--batch", "1"]),
]
GENERATED_SEEDS = [1, 2, 3, 4, 5, 6, 7, 8]


def load(path):
    spec = importlib.util.spec_from_file_location("case_%d" % abs(hash(path)), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class MetaChecker(torch.fx.Interpreter):
    """Runs the module and checks each value against the tensor_meta the writer recorded."""

    def __init__(self, gm):
        super().__init__(gm)
        self.problems = []

    def run_node(self, n):
        value = super().run_node(n)
        tm = n.meta.get("tensor_meta")
        if isinstance(tm, torch.fx.passes.shape_prop.TensorMetadata) and isinstance(value, torch.Tensor):
            got = (tuple(value.shape), tuple(value.stride()), value.dtype)
            want = (tuple(tm.shape), tuple(tm.stride), tm.dtype)
            if got != want:
                self.problems.append("%s: computed %s, recorded %s" % (n.name, got, want))
        return value


def check_graph(label, graph_file, workdir, structure_only=False):
    py = os.path.join(workdir, label + ".py")
    ins = os.path.join(workdir, label + "-in.pt")
    outs = os.path.join(workdir, label + "-out.pt")
    support.run(["export-python", graph_file, "-o", py, "--save-inputs", ins, "--save-outputs", outs], expect=0)
    return check_module(label, py, ins, outs, graph_file, structure_only)


def check_module(label, py, ins, outs, graph_file, structure_only=False):
    module = load(py)
    gm = module.build()
    graph_text = open(graph_file).read()
    # Kinds: every placeholder records its kind, in the graph's input order.
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    recorded = [(n.meta["passcheck_name"], n.meta["passcheck_kind"]) for n in placeholders]
    assert recorded == [tuple(x) for x in module.PASSCHECK_INPUTS], (label, recorded[:3])
    for name, kind in module.PASSCHECK_INPUTS:
        assert "%s %%%s :" % (kind, name) in graph_text, (label, name, kind)
    calls = [n for n in gm.graph.nodes if n.op == "call_function" and n.target.__module__ != "_operator"]
    node_lines = [l for l in graph_text.splitlines() if l.startswith("  %") or l.startswith("  () =")]
    assert len(calls) == len(node_lines), (label, len(calls), len(node_lines))
    inputs = load_archive(ins)
    expected = load_archive(outs)
    checker = MetaChecker(gm)
    torch.manual_seed(0)
    got = checker.run(*[x.clone() if isinstance(x, torch.Tensor) else x for x in inputs])
    assert len(got) == len(expected), (label, len(got), len(expected))
    assert not checker.problems, (label, checker.problems[:3])
    if structure_only:
        for g, e in zip(got, expected):
            assert (g.shape, g.dtype) == (e.shape, e.dtype) if isinstance(e, torch.Tensor) else True
        return "%s: %d nodes, %d outputs (structure only: random)" % (label, len(calls), len(got))
    for i, (g, e) in enumerate(zip(got, expected)):
        ok, why = support.bitwise_equal(g, e)
        assert ok, "%s: output %d differs from passcheck's executor: %s" % (label, i, why)
    return "%s: %d nodes, %d outputs bitwise equal" % (label, len(calls), len(got))


def main():
    with tempfile.TemporaryDirectory() as workdir:
        for model, extra in TRACED + [("dropout_mlp", [])]:
            _, text = support.run(["trace", "--model", model] + extra, expect=0)
            graph_file = os.path.join(workdir, model + ".graph")
            with open(graph_file, "w") as f:
                f.write(text)
            print(check_graph(model, graph_file, workdir, structure_only=(model == "dropout_mlp")))
        for seed in GENERATED_SEEDS:
            label = "generated-%d" % seed
            graph_file = os.path.join(workdir, label + ".graph")
            py = os.path.join(workdir, label + ".py")
            ins, outs = os.path.join(workdir, label + "-in.pt"), os.path.join(workdir, label + "-out.pt")
            support.run(["export-python", "--generated", str(seed), "--graph-out", graph_file, "-o", py,
                         "--save-inputs", ins, "--save-outputs", outs], expect=0)
            print(check_module(label, py, ins, outs, graph_file))
        # Collectives are PyTorch's own functional collectives: they have a Python form.
        collective = os.path.join(workdir, "collective.graph")
        with open(collective, "w") as f:
            f.write("graph(arg %x : f32[4]):\n"
                    "  %g : f32[8] = _c10d_functional::all_gather_into_tensor(%x, 2, \"dp\")\n"
                    "  %w : f32[8] = _c10d_functional::wait_tensor(%g)\n"
                    "  return (%w)\n")
        code, out = support.run(["export-python", collective, "-o", os.path.join(workdir, "collective.py")], expect=0)
        text = open(os.path.join(workdir, "collective.py")).read()
        assert "_c10d_functional" in text and "all_gather_into_tensor" in text, text[-800:]
        # What has no Python form is refused with the node named (exit 2).
        bad = os.path.join(workdir, "own.graph")
        with open(bad, "w") as f:
            f.write("graph(arg %x : f32[4]):\n"
                    "  %s : u8[5056] = passcheck::rng_state(device(\"cpu\"))\n"
                    "  return (%x)\n")
        code, out = support.run(["export-python", bad], expect=2)
        assert "%s (passcheck::rng_state, line 2)" in out and "Python's torch has no such operator" in out, out
        print("passcheck's own operator refused: " + out.strip().splitlines()[-1])
    print("roundtrip: OK")


if __name__ == "__main__":
    main()
