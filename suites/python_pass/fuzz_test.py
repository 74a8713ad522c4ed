"""passcheck fuzz --python-pass: one scenario per invocation (CTest runs each as its own
test so each stays well under a minute). Usage: fuzz_test.py PASSCHECK_BINARY SCENARIO.

  correct PASS     a correct example pass survives 20 generated cases (exit 0)
  broken           example_passes:swap_first_add is caught: exit 1, a repro that names
                   the Python pass, replays with `passcheck repro FILE` (exit 1) and
                   minimizes with `passcheck minimize`
  bad-spec         a misspelt module, function or non-callable is bad input (exit 2)
  worker-failures  a pass that raises, returns a non-module, crashes or hangs is a failure of
                   the pass (exit 1, a repro naming what happened), never a crash; a repro
                   naming a pass this machine cannot import is bad input (exit 2)
  no-python-form   a graph with passcheck's own operators is not given to the pass
"""
import glob
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import support  # noqa: E402


def fuzz(spec, path, out, extra, expect):
    return support.run(["fuzz", "--python-pass", spec, "--python-path", path, "--out", out] + extra, expect=expect)[1]


def correct(name, workdir):
    out = fuzz("example_passes:" + name, support.EXAMPLES, workdir, ["--cases", "20", "--seed", "11", "--jobs", "2"], 0)
    summary = re.search(r"fuzz summary: (\d+) cases run, (\d+) failures.*?([0-9.]+) cases/s", out)
    assert summary and summary.group(1) == "20" and summary.group(2) == "0", out
    assert "python{pass=example_passes:%s,path=%s}" % (name, support.EXAMPLES) in out, out
    assert not glob.glob(os.path.join(workdir, "*.repro")), "passing cases leave no repro files"
    print(summary.group(0))


def broken(workdir):
    out = fuzz("example_passes:swap_first_add", support.EXAMPLES, workdir,
               ["--cases", "20", "--seed", "11", "--max-failures", "1", "--minimize-seconds", "12"], 1)
    # The minimized graph still holds an add the pass turns into a sub.
    support.expect_one_replaying_repro(workdir, out, "python{pass=example_passes:swap_first_add,path=%s}" % support.EXAMPLES,
                                       ["changed numerics", "elements differ"], 8)


def bad_spec(workdir):
    for spec, words in [("no_such_module_xyz:f", "cannot import module 'no_such_module_xyz'"),
                        ("example_passes:no_such_function", "has no 'no_such_function'"),
                        ("example_passes", "expected MODULE:FUNCTION")]:
        code, out = support.run(["fuzz", "--python-pass", spec, "--python-path", support.EXAMPLES, "--cases", "1",
                                 "--out", workdir], expect=2)
        assert words in out, (spec, out)
    code, out = support.run(["fuzz", "--python-pass", "test_passes:not_callable", "--python-path", support.HERE,
                             "--cases", "1", "--out", workdir], expect=2)
    assert "is not callable" in out, out
    code, out = support.run(["fuzz", "--python-pass", "example_passes:dce", "--python-path", "/no/such/dir",
                             "--cases", "1", "--out", workdir], expect=2)
    assert "is not a directory" in out, out
    print("bad MODULE:FUNCTION spellings: exit 2")


def worker_failures(workdir):
    for name, words, extra in [("raises", "the Python pass raised an exception", []),
                               ("returns_a_string", "cannot be exported back", []),
                               ("crashes", "the Python worker died without an answer", []),
                               ("hangs", "timeout", ["--timeout-ms", "8000"])]:
        sub = os.path.join(workdir, name)
        out = fuzz("test_passes:" + name, support.HERE, sub, ["--cases", "1", "--no-minimize"] + extra, 1)
        repros = glob.glob(os.path.join(sub, "*.repro"))
        assert len(repros) == 1, (name, out)
        text = open(repros[0]).read()
        assert words in text or words in out, (name, words, out, text[:1500])
        if name == "raises":
            assert "ValueError: this pass always fails" in text, text[:1500]
        if name != "hangs":  # `repro` replays it through a server of its own (a hang would wait out its limit)
            code, replay = support.run(["repro", "--allow-python", repros[0]], expect=1)
            assert "verdict: FAILS" in replay and "python pass test_passes:" + name in replay, replay
        if name == "raises":
            # The same repro naming a function this machine cannot import: bad input.
            moved = os.path.join(sub, "moved.repro")
            with open(moved, "w") as f:
                f.write(text.replace("pass=test_passes:raises", "pass=test_passes:gone_away"))
            code, replay = support.run(["repro", "--allow-python", moved], expect=2)
            assert "has no 'gone_away'" in replay, replay
        print("%s: %s" % (name, [l for l in out.splitlines() if l.startswith("case ")][0]))


NO_PYTHON_FORM = """#! passcheck-repro 1
#! version: 0.1.0
#! status: pending
#! pipeline: python{pass=example_passes:swap_first_add,path=%s}
#! registries: python
#! seed: 1
#! int-high: 1
#! case: a graph holding passcheck's own grouped_mm
# original
graph(arg %%x : f32[4, 2], arg %%w : f32[2, 2, 3], arg %%o : i64[2]):
  %%y : f32[4, 3] = %s
  %%a : f32[4, 2] = aten::add.Tensor(%%x, %%x, 1)
  return (%%y, %%a)
"""


def no_python_form(workdir):
    # grouped_mm has no Python form: the pass is not given the graph, so its add survives;
    # the same graph with an aten op there is given to it, and the broken pass is caught.
    left_alone = os.path.join(workdir, "grouped_mm.repro")
    with open(left_alone, "w") as f:
        f.write(NO_PYTHON_FORM % (support.EXAMPLES, "passcheck::grouped_mm(%x, %w, %o)"))
    code, out = support.run(["repro", "--allow-python", left_alone], expect=0)
    assert "verdict: PASSES" in out, out
    checked = os.path.join(workdir, "zeros.repro")
    with open(checked, "w") as f:
        f.write(NO_PYTHON_FORM % (support.EXAMPLES, "aten::zeros([4, 3], None, None, None, None)"))
    code, out = support.run(["repro", "--allow-python", checked], expect=1)
    assert "changed numerics: output 1 %a" in out, out
    print("a graph without a Python form is left alone; the same graph with one is checked")


def main():
    scenario = sys.argv[2]
    with tempfile.TemporaryDirectory() as workdir:
        if scenario == "correct":
            correct(sys.argv[3], workdir)
        elif scenario == "broken":
            broken(workdir)
        elif scenario == "bad-spec":
            bad_spec(workdir)
        elif scenario == "worker-failures":
            worker_failures(workdir)
        elif scenario == "no-python-form":
            no_python_form(workdir)
        else:
            raise SystemExit("unknown scenario " + scenario)
    print(scenario + ": OK")


if __name__ == "__main__":
    main()
