#!/usr/bin/env python3
"""The hostile-corpus runner catches what it promises to (docs/hostile-inputs.md).

Runs suites/hostile/run_corpus.py on a throw-away corpus whose "passcheck" is a script
that misbehaves in one way per case (writes the victim file, crashes, hangs, allocates
8 GiB, prints 200 KB, leaves a daemon or a child behind, writes into its scratch
directory, prints a glog line or a traceback, exits 1) and checks that every case FAILS
for its reason, and that a well-behaved case passes. Exit 0 when all hold, 1 otherwise.

  runner_selftest.py [--python PY]
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

FAKE = r'''#!/usr/bin/env python3
import os, sys, time
mode = sys.argv[1]
if mode == "victim":
    with open(sys.argv[2], "a") as f:
        f.write("x")
elif mode == "victim-new-file":
    open(os.path.join(sys.argv[2], "pwned"), "w").close()
elif mode == "segv":
    import ctypes
    ctypes.string_at(0)
elif mode == "hang":
    time.sleep(100)
elif mode == "spew":
    sys.stdout.write("e" * 200000 + "\n")
elif mode == "alloc":
    block = bytearray(8 << 30)
elif mode == "daemon":
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            time.sleep(100)
        os._exit(0)
elif mode == "child":
    import subprocess
    subprocess.Popen(["sleep", "100"])
elif mode == "scratch":
    with open("new.txt", "w") as f:
        f.write("x")
elif mode == "glog":
    print("[W1127 17:29:07.020623413 socket.cpp:764] [c10d] raw log line")
elif mode == "traceback":
    print("Traceback (most recent call last):\n  File \"x.py\", line 1\nValueError: x")
elif mode == "exit1":
    print("error: done")
    sys.exit(1)
print("error: done")
sys.exit(2)
'''

# case name -> (argv after the fake binary, extra case.json keys, reason the runner must give; None: must pass)
CASES = {
    "victim": (["victim", "{victim}/file"], {}, r"VICTIM file: changed"),
    "victim-new-file": (["victim-new-file", "{victim}"], {}, r"VICTIM pwned: created"),
    "segv": (["segv"], {}, r"killed by signal 11"),
    "hang": (["hang"], {"timeout_s": 3}, r"timed out after 3 s"),
    "spew": (["spew"], {}, r"printed 2000\d\d bytes"),
    "alloc": (["alloc"], {"memory_mb": 2000}, r"exit 1, expected 2"),
    "daemon": (["daemon"], {}, r"process\(es\) outlived the command"),
    "child": (["child"], {}, r"process\(es\) outlived the command \(\d+ sleep 100\)"),
    "scratch": (["scratch"], {}, r"scratch new\.txt: created"),
    "scratch-allowed": (["scratch"], {"outputs": ["new.txt"]}, None),
    "glog": (["glog"], {}, r"output holds a glog line"),
    "traceback": (["traceback"], {}, r"output holds a Python traceback"),
    "exit1": (["exit1"], {}, r"exit 1, expected 2"),
    "wrong-message": (["fine"], {"message": "no such text"}, r"output does not match"),
    "fine": (["fine"], {}, None),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()
    root = tempfile.mkdtemp(prefix="hostile-selftest-")
    try:
        fake = os.path.join(root, "fake-passcheck")
        with open(fake, "w") as f:
            f.write(FAKE.replace("#!/usr/bin/env python3", "#!" + sys.executable, 1))
        os.chmod(fake, 0o755)
        corpus = os.path.join(root, "corpus")
        for name, (argv, extra, _) in CASES.items():
            os.makedirs(os.path.join(corpus, name))
            spec = {"argv": argv, "exit": 2, "message": "error: done", "timeout_s": 20}
            spec.update(extra)
            with open(os.path.join(corpus, name, "case.json"), "w") as f:
                json.dump(spec, f)
        run = subprocess.run([sys.executable, os.path.join(HERE, "run_corpus.py"), "--passcheck", fake,
                              "--python", args.python, "--corpus", corpus, "--jobs", "2"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
        lines = {m.group(2): m.group(0) for m in re.finditer(r"^(PASS|FAIL) ([\w-]+).*$", run.stdout, re.M)}
        failures = []
        for name, (_, _, reason) in CASES.items():
            line = lines.get(name)
            if line is None:
                failures.append(f"{name}: no result line")
            elif reason is None and not line.startswith("PASS"):
                failures.append(f"{name}: should pass: {line}")
            elif reason is not None and not (line.startswith("FAIL") and re.search(reason, line)):
                failures.append(f"{name}: should fail with /{reason}/: {line}")
        if run.returncode != 1:
            failures.append(f"run_corpus.py exited {run.returncode}, expected 1 (some cases fail)")
        for failure in failures:
            print("FAIL " + failure)
        if failures:
            print(run.stdout)
            return 1
        print(f"runner self-test: all {len(CASES)} misbehaviours reported as they should be")
        return 0
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
