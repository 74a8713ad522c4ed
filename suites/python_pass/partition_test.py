"""passcheck fuzz --python-pass with partitioners (passes marked passcheck_fx.partitioner,
checked as the module pass python-partitioner): one scenario per invocation.
Usage: partition_test.py PASSCHECK_BINARY SCENARIO.

  min-cut          a short campaign of functorch's min_cut_rematerialization_partition
                   (example_passes:upstream_min_cut) runs as a module pass: every case is
                   split into a forward and a backward part, which run in order must equal
                   the joint graph bit for bit
  broken PASS      a deliberately broken min-cut wrapper (min_cut_swapping_saved_values,
                   min_cut_dropping_saved_value) is caught: exit 1, a repro naming
                   python-partitioner that replays with `passcheck repro` (exit 1) and
                   minimizes
"""
import glob
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import support  # noqa: E402


def fuzz(spec, out, extra, expect):
    return support.run(["fuzz", "--python-pass", spec, "--python-path", support.EXAMPLES, "--out", out] + extra,
                       expect=expect)[1]


def pipeline(name):
    return "python-partitioner{pass=example_passes:%s,path=%s}" % (name, support.EXAMPLES)


def min_cut(workdir):
    out = fuzz("example_passes:upstream_min_cut", workdir, ["--cases", "8", "--seed", "5", "--jobs", "2"], None)
    summary = re.search(r"fuzz summary: (\d+) cases run, (\d+) failures", out)
    assert summary and summary.group(1) == "8", out
    assert pipeline("upstream_min_cut") in out, out
    # Each failure (an upstream bug: docs/python-passes.md) leaves a repro that replays.
    repros = glob.glob(os.path.join(workdir, "*.repro"))
    assert len(repros) == int(summary.group(2)), (repros, out)
    for repro in repros:
        support.run(["repro", "--allow-python", repro], expect=1)
    # What the worker hands back for a generated case: a module of a forward and a
    # backward part, the backward reading values the forward saved.
    case_py = os.path.join(workdir, "case.py")
    support.run(["export-python", "--generated", "3", "-o", case_py], expect=0)
    module = os.path.join(workdir, "module.txt")
    worker = subprocess.run([sys.executable, "-m", "passcheck_fx.pass_worker", "--pass",
                             "passcheck_fx.examples.example_passes:upstream_min_cut", "--graph", case_py, "--out", module],
                            env=dict(os.environ, PYTHONPATH=os.path.join(support.SOURCE_DIR, "python")),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    assert worker.returncode == 0, worker.stdout
    text = open(module).read()
    assert text.startswith("module inputs (") and "\npart forward\n" in text, text[:800]
    links = re.search(r"\npart backward from \(([^)]*)\)", text)
    assert links and "forward." in links.group(1), text[:3000]
    print(summary.group(0))
    print("case 3 partitioned: backward from (%s)" % links.group(1))


def broken(name, workdir):
    out = fuzz("example_passes:" + name, workdir,
               ["--cases", "20", "--seed", "11", "--max-failures", "1", "--minimize-seconds", "5"], 1)
    support.expect_one_replaying_repro(workdir, out, pipeline(name), ["changed numerics"], 10)


def main():
    scenario = sys.argv[2]
    with tempfile.TemporaryDirectory() as workdir:
        if scenario == "min-cut":
            min_cut(workdir)
        elif scenario == "broken":
            broken(sys.argv[3], workdir)
        else:
            raise SystemExit("unknown scenario " + scenario)
    print(scenario + ": OK")


if __name__ == "__main__":
    main()
