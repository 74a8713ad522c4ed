"""`passcheck fuzz --python-pass` over graph_trainer's passes, on generated programs shaped
so each pass has work to do: the debug models' joint graphs (layers, backward, loss:
what SAC tags and remat duplicates; --models) and the cleanup situations (detach, identity
views and slices, transpose pairs, views of updated values: --situations).

Default (CI): short campaigns that must hold, and a known-buggy variant of canonicalize
(titan_mutants) that a campaign of the same size must catch.
--campaign NAME --seconds S: one long campaign over upstream_passes.NAME; prints cases,
failures and the distinct messages (docs/verifying-a-python-pass.md has the table).

    fuzz_test.py PASSCHECK [--campaign NAME --seconds S]"""
import argparse
import collections
import glob
import os
import re
import subprocess
import sys
import tempfile

import support

parser = argparse.ArgumentParser()
parser.add_argument("passcheck")
parser.add_argument("--campaign")
parser.add_argument("--seconds", type=float, default=600)
parser.add_argument("--jobs", type=int, default=2)
args = parser.parse_args()

CASES = {  # pass -> generator flag
    "sac_remat_default": "--models", "sac_remat_full": "--models", "sac_remat_eager": "--models",
    "cleanup_then_sac": "--models", "canonicalize": "--situations", "eliminate_dead_code": "--situations",
    "min_cut_sac_default": "--models",
}
env = dict(os.environ, PYTHONPATH=os.path.join(support.SOURCE_DIR, "python"))


def campaign(function, generator, limit, out, module="passcheck_fx.titan.upstream_passes", extra=()):
    command = [args.passcheck, "fuzz", generator, "--python-pass", f"{module}:{function}", "--out", out,
               "--jobs", str(args.jobs), "--seed", "1"] + list(limit) + list(extra)
    proc = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    summary = re.search(r"fuzz summary: (\d+) cases run, (\d+) failures", proc.stdout)
    messages = collections.Counter()
    for repro in glob.glob(os.path.join(out, "*.repro")):
        for line in open(repro):
            if line.startswith("#! message:"):
                # The distinct bug: the message without node names and numbers.
                messages[re.sub(r"%\w+|\d+", "#", line[len("#! message:"):].strip())[:160]] += 1
    return proc.returncode, proc.stdout, (int(summary.group(1)), int(summary.group(2))) if summary else None, messages


if args.campaign:
    out = tempfile.mkdtemp(prefix=f"titan-campaign-{args.campaign}-")
    code, text, counts, messages = campaign(args.campaign, CASES[args.campaign], ["--seconds", str(args.seconds)], out)
    print(text[-3000:])
    support.check(counts is not None, f"{args.campaign}: the campaign printed no summary (exit {code})")
    print(f"| {args.campaign} | {CASES[args.campaign]} | {counts[0]} | {counts[1]} | {len(messages)} |")
    for message, n in messages.most_common():
        print(f"  {n} x {message}")
    print(f"repro files: {out}")
    sys.exit(0 if code in (0, 1) else code)

for function, cases in (("sac_remat_default", 4), ("canonicalize", 40), ("eliminate_dead_code", 40)):
    out = tempfile.mkdtemp(prefix=f"titan-fuzz-{function}-")
    code, text, counts, messages = campaign(function, CASES[function], ["--cases", str(cases)], out)
    print(text[-1500:])
    support.check(code == 0 and counts == (cases, 0),
                  f"{function}: expected {cases} cases and no failure, got exit {code}, {counts}: {dict(messages)}")

out = tempfile.mkdtemp(prefix="titan-fuzz-mutant-")
code, text, counts, messages = campaign("canonicalize_cancels_any_transposes", "--situations", ["--cases", "40"], out,
                                        module="titan_mutants", extra=["--python-path", support.HERE,
                                                                       "--max-failures", "1"])
print(text[-1500:])
support.check(code == 1 and counts and counts[1] >= 1,
              f"the known-buggy canonicalize was not caught in 40 situations (exit {code}, {counts})")
