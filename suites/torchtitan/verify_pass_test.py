"""`passcheck_fx.titan.verify_pass` and `python3 -m passcheck_fx verify-pass`, as a pass
author uses them: a correct graph_trainer pass verifies (exit 0), a known-buggy variant
of it (titan_mutants) fails (exit 1) with a replay command, bad input exits 2.

    verify_pass_test.py PASSCHECK"""
import os
import subprocess
import sys

import support
from passcheck_fx.titan import PassVerificationError, models, upstream_passes, verify_pass

passcheck = support.passcheck_binary()
step = models.trace_step("llama3")

report = verify_pass(upstream_passes.sac_remat_default, step=step, steps=2, passcheck=passcheck)
print(report.summary())
support.check(report.ok and report.figures["nodes after"] > report.figures["nodes before"],
              "the default SAC + remat pass should verify and recompute nodes")

import titan_mutants  # noqa: E402
for name, mutant in titan_mutants.MUTANTS.items():
    try:
        report = verify_pass(mutant, step=step, steps=2, passcheck=passcheck)
    except PassVerificationError as error:
        print(f"mutant {name}: caught\n{error}")
        support.check("replay:" in str(error), f"mutant {name}: the failure names no replay command")
        continue
    if name == "canonicalize_cancels_any_transposes" and report.figures["nodes after"] == report.figures["nodes before"]:
        print(f"mutant {name}: not triggered by llama3 (no transpose pair with other dimensions); the fuzz test "
              "covers it")
        continue
    support.check(False, f"mutant {name} was not caught: {report.summary()}")

env = dict(os.environ, PASSCHECK_BINARY=passcheck,
           PYTHONPATH=os.pathsep.join([os.path.join(support.SOURCE_DIR, "python"), support.HERE]))
cli = [sys.executable, "-m", "passcheck_fx", "verify-pass"]
cases = [
    (["passcheck_fx.titan.upstream_passes:eliminate_dead_code", "--steps", "1"], 0),
    (["titan_mutants:sac_remat_wrong_input", "--steps", "1"], 1),
    (["titan_mutants:no_such_pass"], 2),
    (["not-a-spec"], 2),
    (["passcheck_fx.titan.upstream_passes:canonicalize", "--model", "gpt9"], 2),
]
for args, expected in cases:
    proc = subprocess.run(cli + args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True)
    print(f"$ verify-pass {' '.join(args)} -> exit {proc.returncode}\n{proc.stdout[-1500:]}")
    support.check(proc.returncode == expected, f"verify-pass {' '.join(args)}: exit {proc.returncode}, "
                                               f"expected {expected}")
