"""What the bridge hands a Python pass (python/passcheck_fx/callers.py), and campaigns
that say when the pass under test changed nothing. One scenario per invocation:
hand_over_test.py PASSCHECK_BINARY SCENARIO [NAME].

  fake-values      generated cases get meta["val"] FakeTensors of one fake mode that agree
                   with passcheck's types, a view's value sharing its base's storage
  val-keyed-acts   a pass keyed on meta["val"] (example_passes:annotate_value_bytes) changes
                   every generated graph's metadata when handed over as its caller does,
                   and none handed over bare; --require-change makes that campaign exit 1
  require-change   the identity pass changes no case's graph: said in the summary, exit 0,
                   and exit 1 with --require-change
  inductor-context a post-grad pass runs with V.fake_mode and a TracingContext set (exit 0);
                   handed over bare it fails for want of them (exit 1)
  refused-context  a pass that requires what the bridge cannot give is bad input (exit 2)
  bisect           a list of Python passes whose second breaks the case: the repro names that
                   pass alone, on the graph the first made, and replays with exit 1; with the
                   broken pass first, the repro's graph is the generated one
  tolerance        a pass that changes rounding passes under a declared tolerance (counted
                   apart from bitwise) and fails without one; a wrong pass fails under it too
  features         the generator features give shipped passes work: graph_trainer's
                   remove_identity_view and inductor's remove_noop_ops change no case without
                   them and most cases with them, with no failure
  mutant NAME      the registered Python mutant NAME (python_mutants.py) is caught (exit 1)
                   and missed by the same campaign with its catching feature off (exit 0)
"""
import glob
import importlib.util
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import support  # noqa: E402

sys.path.insert(0, os.path.join(support.SOURCE_DIR, "python"))

CHANGES = re.compile(r"changes: python changed the graph in (\d+) of (\d+) cases \((\d+) the computation")
UNCHANGED = "python changed no case's graph"


def fuzz(spec, path, out, extra, expect):
    args = ["fuzz", "--python-pass", spec, "--out", out] + (["--python-path", path] if path else []) + extra
    return support.run(args, expect=expect)[1]


def fake_values(workdir):
    import torch
    from passcheck_fx.callers import add_fake_values
    shared = 0
    for seed in range(12):
        graph, py = os.path.join(workdir, "c%d.graph" % seed), os.path.join(workdir, "c%d.py" % seed)
        support.run(["export-python", "--generated", str(seed), "--graph-out", graph, "-o", py], expect=0)
        spec = importlib.util.spec_from_file_location("case%d" % seed, py)
        case = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(case)
        gm = case.build()
        mode = add_fake_values(gm)
        for node in gm.graph.nodes:
            meta = node.meta.get("tensor_meta")
            if not hasattr(meta, "dtype"):
                continue
            val = node.meta.get("val")
            assert isinstance(val, torch.Tensor) and val.fake_mode is mode, (seed, node.name)
            assert (tuple(val.shape), tuple(val.stride()), val.dtype) == (tuple(meta.shape), tuple(meta.stride),
                                                                          meta.dtype), (seed, node.name)
            if node.op == "call_function" and getattr(node.target, "is_view", False):
                base = node.args[0].meta.get("val")
                assert val.untyped_storage()._cdata == base.untyped_storage()._cdata, (seed, node.name)
                shared += 1
    assert shared > 0, "no generated case held a view"
    print("12 generated cases: every value has a FakeTensor of one mode with passcheck's type; %d views share "
          "their base's storage" % shared)


def val_keyed_acts(workdir):
    spec = "example_passes:annotate_value_bytes"
    common = ["--cases", "16", "--seed", "11", "--jobs", "2"]
    out = fuzz(spec, support.EXAMPLES, os.path.join(workdir, "caller"), common + ["--require-change"], 0)
    m = CHANGES.search(out)
    assert m and int(m.group(1)) == 16 and int(m.group(3)) == 0 and "16 metadata only" in out, out
    out_bare = fuzz(spec, support.EXAMPLES, os.path.join(workdir, "bare"), common + ["--python-hand-over", "bare"], 0)
    assert UNCHANGED in out_bare, out_bare
    fuzz(spec, support.EXAMPLES, os.path.join(workdir, "bare-required"),
         common + ["--python-hand-over", "bare", "--require-change"], 1)
    print("a pass keyed on meta['val'] changed the metadata of 16 of 16 cases handed over as its caller does, none "
          "handed over bare (and --require-change fails that campaign)")


def require_change(workdir):
    common = ["--cases", "6", "--seed", "11"]
    out = fuzz("example_passes:identity", support.EXAMPLES, os.path.join(workdir, "a"), common, 0)
    assert UNCHANGED in out and "(0 of 6 cases)" in out, out
    out = fuzz("example_passes:identity", support.EXAMPLES, os.path.join(workdir, "b"),
               common + ["--require-change"], 1)
    assert "--require-change: a pass under test changed no case's graph" in out, out
    out = fuzz("example_passes:swap_first_add", support.EXAMPLES, os.path.join(workdir, "c"),
               common + ["--no-minimize"], 1)
    m = CHANGES.search(out)
    assert m and int(m.group(3)) > 0, out
    print("identity: 'changed no case's graph', exit 1 under --require-change; a pass that rewrites operators "
          "counts as changing the computation")


def inductor_context(workdir):
    common = ["--cases", "6", "--seed", "11", "--no-minimize"]
    fuzz("test_passes:checks_inductor_context", support.HERE, os.path.join(workdir, "caller"), common, 0)
    bare = os.path.join(workdir, "bare")
    out = fuzz("test_passes:checks_inductor_context", support.HERE, bare,
               common + ["--python-hand-over", "bare", "--max-failures", "1"], 1)
    repros = glob.glob(os.path.join(bare, "*.repro"))
    assert len(repros) == 1, out
    text = open(repros[0]).read()
    assert "the Python pass raised an exception" in text and "TracingContext" in text, text[:2000]
    # Cases that write in place are not handed to an inductor pass (its caller hands it
    # functional graphs): left alone, never blamed on the pass.
    out = fuzz("passcheck_fx.targets.inductor:remove_noop_ops", None, os.path.join(workdir, "writes"),
               ["--cases", "4", "--seed", "11", "--features", "writes-through-views"], 0)
    assert UNCHANGED in out, out
    print("a post-grad pass finds V.fake_mode, its TracingContext and meta['val'] of that mode; bare, it fails; "
          "cases that write in place are not handed to it")


def refused_context(workdir):
    code, out = support.run(["fuzz", "--python-pass", "test_passes:needs_a_process_group", "--python-path",
                             support.HERE, "--cases", "1", "--out", workdir], expect=2)
    assert "process_group" in out and "cannot give" in out, out
    assert "Traceback" not in out, out
    print("a pass requiring a process group: exit 2 naming it")


def bisect(workdir):
    broken = "python{pass=example_passes:swap_first_add,path=%s}" % support.EXAMPLES
    for order, index in (("example_passes:annotate_value_bytes,example_passes:swap_first_add", 2),
                         ("example_passes:swap_first_add,example_passes:identity", 1)):
        sub = os.path.join(workdir, str(index))
        out = fuzz(order, support.EXAMPLES, sub, ["--cases", "20", "--seed", "11", "--max-failures", "1",
                                                  "--no-minimize"], 1)
        repros = glob.glob(os.path.join(sub, "*.repro"))
        assert len(repros) == 1, out
        text = open(repros[0]).read()
        assert "#! pipeline: %s\n" % broken in text, text[:1500]
        assert "bisected: first fails after pass %d of 2" % index in text, text[:1500]
        graph = text[text.index("# original"):]
        # After annotate_value_bytes the graph carries its custom key: the repro's graph is
        # the one the first pass made.
        assert ("value_bytes" in graph) == (index == 2), graph[:1500]
        code, replay = support.run(["repro", "--allow-python", repros[0]], expect=1)
        assert "verdict: FAILS" in replay, replay
    print("a failure of a list of passes is blamed on the pass after which it first appears, replayed alone")


def tolerance(workdir):
    spec = "example_passes:div_as_mul_by_reciprocal"
    common = ["--cases", "30", "--seed", "11", "--no-minimize"]
    out = fuzz(spec, support.EXAMPLES, os.path.join(workdir, "a"), common + ["--python-tolerance-ulp", "4096"], 0)
    m = re.search(r"tolerance: (\d+) passing cases differed from the original within the declared tolerance "
                  r"\(at most (\d+) ULP\)", out)
    assert m and int(m.group(1)) > 0 and 0 < int(m.group(2)) <= 4096, out
    fuzz(spec, support.EXAMPLES, os.path.join(workdir, "b"), common + ["--max-failures", "1"], 1)
    fuzz("example_passes:swap_first_add", support.EXAMPLES, os.path.join(workdir, "c"),
         common + ["--python-tolerance-ulp", "4096", "--max-failures", "1"], 1)
    print("rounding within %s ULP in %s cases: passes under the declared tolerance, fails bit for bit; a wrong pass "
          "fails under it" % (m.group(2), m.group(1)))


def features(workdir):
    for spec, on in (("passcheck_fx.targets.graph_trainer:remove_identity_view", "identity-views"),
                     ("passcheck_fx.targets.inductor:remove_noop_ops", "identity-views,noop-clones,aliased-outputs")):
        common = ["--cases", "12", "--seed", "11", "--jobs", "2"]
        off = fuzz(spec, None, os.path.join(workdir, "off"), common + ["--features", "none"], 0)
        assert UNCHANGED in off, off
        out = fuzz(spec, None, os.path.join(workdir, "on"), common + ["--features", on, "--require-change"], 0)
        m = CHANGES.search(out)
        assert m and int(m.group(1)) >= 6, out
        assert re.search(r"features: .* of 12 cases", out), out
        print("%s: no case changed without features, %s of 12 with --features %s" % (spec, m.group(1), on))


def mutant(name, workdir):
    import python_mutants
    function, what, caught_by, missed_by = python_mutants.MUTANTS[name]
    spec = "python_mutants:" + name
    common = ["--cases", "20", "--seed", "11", "--jobs", "2", "--max-failures", "1", "--no-minimize"]
    out = fuzz(spec, support.HERE, os.path.join(workdir, "caught"), common + caught_by, 1)
    assert "1 failures" in out or re.search(r"[1-9]\d* failures", out), out
    caught = glob.glob(os.path.join(workdir, "caught", "*.repro"))
    assert caught, out
    text = open(caught[0]).read()
    assert "failed after" not in text, "caught by the gate, not by the property the mutant is for: " + text[:1500]
    out_missed = fuzz(spec, support.HERE, os.path.join(workdir, "missed"), common + missed_by, 0)
    print("mutant %s (%s): caught; missed with %s" % (name, what, " ".join(missed_by)))


def main():
    scenario = sys.argv[2]
    with tempfile.TemporaryDirectory(prefix="passcheck-hand-over-") as workdir:
        if scenario == "mutant":
            mutant(sys.argv[3], workdir)
        else:
            {"fake-values": fake_values, "val-keyed-acts": val_keyed_acts, "require-change": require_change,
             "inductor-context": inductor_context, "refused-context": refused_context,
             "bisect": bisect, "tolerance": tolerance, "features": features}[scenario](workdir)


if __name__ == "__main__":
    main()
