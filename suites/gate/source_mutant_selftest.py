#!/usr/bin/env python3
"""The gate's mutation self-test: each source-level mutant (suites/gate/source_mutants/
NAME.patch, a small bug a reviewer might miss) is applied, one at a time, to a scratch
clone of the checkout; the clone's build is brought up to date; and `passcheck gate` is
run on it as a pull request's CI runs it (--base HEAD: the mutant is the whole change).
Every mutant must fail the gate (exit 1) within the budget.

Usage:
  source_mutant_selftest.py --source DIR --python PY [--scratch DIR] [--mutants a,b]
                            [--budget 10m] [--jobs N] [--table FILE] [--history FILE]
  source_mutant_selftest.py --source DIR --plan-against BUILD [--mutants a,b] [--budget 10m]

--plan-against BUILD is the cheap form CI runs: no scratch build. Each mutant is applied
to a scratch clone and the gate only plans (--plan) against BUILD, the checkout's own
build; the check that caught the mutant in the last full run (caught_by.tsv beside the
patches) must be planned, and a test must start within the budget by the costs the plan
prints. It guards the selection and ordering, not the verdict.

--scratch (default: DIR/../passcheck-gate-selftest) holds the clone and its build. The
first run builds it whole; each mutant then costs the objects it touches and their links.
--in-place BUILD skips the scratch clone: each mutant is applied to DIR itself (which must
have no uncommitted change), BUILD (DIR's own build) is brought up to date, the gate runs,
and the mutant is reverted and BUILD rebuilt, so nothing else may use DIR meanwhile. --table writes a Markdown table (mutant, build
seconds, verdict, first failing check, seconds to it); --history writes the catch
history the gate orders its tests by (check<TAB>first catches). Exit 0 when every
mutant failed the gate, 1 otherwise, 2 on bad input.
"""
import argparse
import glob
import os
import re
import subprocess
import sys
import time

FAILED = re.compile(r"^\[\s*([0-9.]+)s\] FAILED\s+(test (.+?)|(.+?)) \(\d+ ms\)$")


def run(argv, cwd=None, log=None, timeout=None):
    started = time.monotonic()
    p = subprocess.run(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
    if log:
        with open(log, "w") as f:
            f.write(p.stdout)
    return p.returncode, p.stdout, time.monotonic() - started


def mutant_description(path):
    with open(path) as f:
        first = f.readline().strip()
    return first[1:].strip() if first.startswith("#") else ""


def prepare_scratch(source, scratch, python):
    tree = os.path.join(scratch, "tree")
    if not os.path.isdir(os.path.join(tree, ".git")):
        os.makedirs(scratch, exist_ok=True)
        code, out, _ = run(["git", "clone", "-q", "--shared", source, tree])
        if code != 0:
            sys.exit(f"source_mutant_selftest.py: cannot clone {source}: {out}")
    head = run(["git", "-C", source, "rev-parse", "HEAD"])[1].strip()
    for argv in (["git", "-C", tree, "fetch", "-q", source, head], ["git", "-C", tree, "checkout", "-q", "--detach", head],
                 ["git", "-C", tree, "reset", "-q", "--hard", head], ["git", "-C", tree, "clean", "-qfdx", "-e", "build"]):
        code, out, _ = run(argv)
        if code != 0:
            sys.exit(f"source_mutant_selftest.py: {' '.join(argv)} failed: {out}")
    build = os.path.join(tree, "build")
    if not os.path.exists(os.path.join(build, "build.ninja")):
        code, out, _ = run(["cmake", "-S", tree, "-B", build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                            f"-DPASSCHECK_PYTHON={python}"])
        if code != 0:
            sys.exit(f"source_mutant_selftest.py: configuring {build} failed:\n{out[-3000:]}")
    return tree, build


def build_tree(build):
    code, out, seconds = run(["cmake", "--build", build])
    return code, out, seconds


PLANNED_TEST = re.compile(r"^  test (.+) \[(names|reads|links), ([0-9.e+-]+) s, \d+ catches\]: ")


def caught_by(source):
    out = {}
    path = os.path.join(source, "suites", "gate", "source_mutants", "caught_by.tsv")
    if os.path.exists(path):
        for line in open(path):
            if line.strip() and not line.startswith("#"):
                name, check = line.rstrip("\n").split("\t", 1)
                out[name] = check
    return out


def plan_against(source, build, wanted, names, budget, jobs):
    """The cheap check: the recorded catching check is planned, a test within the budget."""
    seconds = float(budget[:-1]) * {"s": 1, "m": 60, "h": 3600}[budget[-1]] if budget[-1] in "smh" else float(budget)
    expected = caught_by(source)
    scratch = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"passcheck-gate-plan-{os.getpid()}")
    tree = os.path.join(scratch, "tree")
    code, out, _ = run(["git", "clone", "-q", "--shared", source, tree])
    if code != 0:
        print(f"source_mutant_selftest.py: cannot clone {source}: {out}", file=sys.stderr)
        return 2
    failures = []
    try:
        for name in wanted:
            if name not in expected:
                failures.append(f"{name}: no catching check recorded in caught_by.tsv (run the full self-test)")
                continue
            run(["git", "-C", tree, "checkout", "-q", "--", "."])
            code, out, _ = run(["git", "-C", tree, "apply", names[name]])
            if code != 0:
                failures.append(f"{name}: the patch no longer applies: {out.strip()}")
                continue
            code, out, _ = run([os.path.join(build, "bin", "passcheck"), "gate", "--repo", tree, "--build-dir", build,
                                "--base", "HEAD", "--plan", "--budget", budget, "--jobs", str(jobs)])
            if code != 0:
                failures.append(f"{name}: gate --plan exited {code}:\n{out[-2000:]}")
                continue
            check = expected[name]
            # Tests start in the order planned on the jobs the pass checks leave; the pass
            # checks run beside them from the start, in their own order.
            start, found = 0.0, False
            for line in out.splitlines():
                m = PLANNED_TEST.match(line)
                if m and check == "test " + m.group(1):
                    found = True
                    break
                if m:
                    start += float(m.group(3)) / max(jobs - 1, 1)
                if not m and line == "  pass " + check:
                    found, start = True, 0.0
                    break
            if not found:
                failures.append(f"{name}: the gate no longer plans {check!r}, which caught it")
            elif start > seconds:
                failures.append(f"{name}: {check!r} would start after about {start:.0f} s, past the {budget} budget")
            else:
                print(f"{name}: {check!r} planned, starting by about {start:.0f} s")
    finally:
        run(["rm", "-rf", scratch])
    for f in failures:
        print(f)
    print(f"{len(wanted) - len(failures)} of {len(wanted)} source mutants: their catching check is planned in time")
    return 1 if failures else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", required=True)
    parser.add_argument("--python")
    parser.add_argument("--plan-against")
    parser.add_argument("--in-place")
    parser.add_argument("--scratch")
    parser.add_argument("--mutants", default="")
    parser.add_argument("--budget", default="10m")
    parser.add_argument("--jobs", default=str(os.cpu_count() or 2))
    parser.add_argument("--table")
    parser.add_argument("--history")
    args = parser.parse_args()
    source = os.path.abspath(args.source)
    patches = sorted(glob.glob(os.path.join(source, "suites", "gate", "source_mutants", "*.patch")))
    names = {os.path.basename(p)[:-6]: p for p in patches}
    wanted = [m for m in args.mutants.split(",") if m] or sorted(names)
    unknown = [m for m in wanted if m not in names]
    if unknown or not wanted:
        print(f"source_mutant_selftest.py: unknown mutants {unknown} (known: {sorted(names)})", file=sys.stderr)
        return 2
    if args.plan_against:
        return plan_against(source, os.path.abspath(args.plan_against), wanted, names, args.budget, int(args.jobs))
    if not args.python and not args.in_place:
        print("source_mutant_selftest.py: --python is needed to build the scratch clone", file=sys.stderr)
        return 2
    scratch = os.path.abspath(args.scratch or os.path.join(os.path.dirname(source), "passcheck-gate-selftest"))
    if args.in_place:
        if run(["git", "-C", source, "status", "--porcelain", "--untracked-files=no"])[1].strip():
            print("source_mutant_selftest.py: --in-place needs a checkout with no uncommitted change", file=sys.stderr)
            return 2
        tree, build = source, os.path.abspath(args.in_place)
    else:
        tree, build = prepare_scratch(source, scratch, args.python)
    logs = os.path.join(scratch, "logs")
    os.makedirs(logs, exist_ok=True)

    rows, history, survivors = [], {}, []
    for name in wanted:
        run(["git", "-C", tree, "checkout", "-q", "--", "."])
        code, out, _ = run(["git", "-C", tree, "apply", names[name]])
        if code != 0:
            print(f"{name}: the patch no longer applies:\n{out}")
            survivors.append(name)
            rows.append((name, "-", "patch does not apply", "-", "-"))
            continue
        code, out, build_seconds = build_tree(build)
        if code != 0:
            print(f"{name}: the mutant does not build:\n{out[-3000:]}")
            survivors.append(name)
            rows.append((name, f"{build_seconds:.0f}", "does not build", "-", "-"))
            continue
        log = os.path.join(logs, name + ".log")
        gate = [os.path.join(build, "bin", "passcheck"), "gate", "--repo", tree, "--build-dir", build, "--base", "HEAD",
                "--budget", args.budget, "--jobs", args.jobs, "--fail-fast", "--out", os.path.join(scratch, "repros", name),
                "--junit", os.path.join(logs, name + ".xml")]
        code, out, gate_seconds = run(gate, cwd=scratch, log=log)
        first = None  # (seconds, check, test name or None)
        for line in out.splitlines():
            m = FAILED.match(line)
            if m:
                first = (float(m.group(1)), m.group(2), m.group(3))
                break
        verdict = {0: "PASS (survived)", 1: "FAIL (caught)"}.get(code, f"exit {code}")
        print(f"{name}: built in {build_seconds:.0f} s; gate {verdict} after {gate_seconds:.0f} s" +
              (f"; first failing check {first[1]!r} at {first[0]:.0f} s" if first else "") + f" (log {log})")
        if code != 1:
            survivors.append(name)
        if first and first[2] and code == 1:
            history[first[2]] = history.get(first[2], 0) + 1  # the gate orders tests by these
        rows.append((name, f"{build_seconds:.0f}", verdict, first[1] if first else "-",
                     f"{first[0]:.0f}" if first else "-"))
    run(["git", "-C", tree, "checkout", "-q", "--", "."])
    if args.in_place:
        build_tree(build)

    if args.table:
        with open(args.table, "w") as f:
            f.write("| mutant | what it breaks | build (s) | gate | first failing check | seconds to it |\n")
            f.write("|---|---|---|---|---|---|\n")
            for name, build_s, verdict, check, at in rows:
                f.write(f"| `{name}` | {mutant_description(names[name])} | {build_s} | {verdict} | {check} | {at} |\n")
    if args.history:
        with open(args.history, "w") as f:
            f.write("# check<TAB>source mutants it caught first (suites/gate/source_mutant_selftest.py)\n")
            for check, n in sorted(history.items()):
                f.write(f"{check}\t{n}\n")
    print(f"{len(wanted) - len(survivors)} of {len(wanted)} source mutants failed the gate" +
          (f"; survived: {', '.join(survivors)}" if survivors else ""))
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
