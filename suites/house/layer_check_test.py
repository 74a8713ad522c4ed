#!/usr/bin/env python3
"""The layer check (ci/check_layers.py) fails on an upward include.

Copies the source tree's layer table and one header of each of framework/ir, workflows/gate
and tools/passcheck into a scratch tree, checks that the copy passes, then plants in the
framework header an include of the gate (a ground-floor layer reaching up) and requires
exit 1 naming the file, the line and the included layer.
"""
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECK = os.path.join(ROOT, "ci", "check_layers.py")


def check(root):
    proc = subprocess.run([sys.executable, CHECK, "--root", root], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True)
    return proc.returncode, proc.stdout


def main():
    with tempfile.TemporaryDirectory() as tmp:
        for path in ["docs/architecture.md", "framework/ir/graph.h", "workflows/gate/gate.h",
                     "tools/passcheck/commands.h"]:
            os.makedirs(os.path.join(tmp, os.path.dirname(path)), exist_ok=True)
            shutil.copy(os.path.join(ROOT, path), os.path.join(tmp, path))
        code, out = check(tmp)
        assert code == 0, "the unmodified copy must pass:\n" + out
        planted = os.path.join(tmp, "framework", "ir", "graph.h")
        with open(planted, "a", encoding="utf-8") as f:
            f.write('#include "workflows/gate/gate.h"\n')
        line = sum(1 for _ in open(planted, encoding="utf-8"))
        code, out = check(tmp)
        assert code == 1, "a planted upward include must fail (exit %d):\n%s" % (code, out)
        expected = "framework/ir/graph.h:%d: layer framework/ir includes workflows/gate/gate.h" % line
        assert expected in out, (expected, out)
        print("planted upward include caught: " + out.splitlines()[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
