"""An upstream bug's repro script must still reproduce it: exit 1 exactly (0 means the bug
is fixed upstream: move the script to a regression; anything else means it broke).

    upstream_bug_test.py SCRIPT"""
import subprocess
import sys

proc = subprocess.run([sys.executable, sys.argv[1]], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                      universal_newlines=True)
print(proc.stdout)
if proc.returncode == 0:
    print(f"{sys.argv[1]} no longer reproduces its bug: fixed upstream? Keep it as a regression (expect exit 0).")
sys.exit(0 if proc.returncode == 1 else 1)
