#!/usr/bin/env python3
"""Runs the hostile corpus (suites/hostile/corpus; docs/hostile-inputs.md).

Each case is a directory holding its input files and a case.json saying how to run
passcheck (or `python3 -m passcheck_fx`) on them, the exit code expected and a regex the
output must match. A case runs in a fresh scratch copy of its directory, under
resource limits (prlimit: data segment, file size, no core files) and a wall-clock
timeout that kills its whole process group, next to a "victim" directory it must not
touch. It passes when the command:

  (a) ends by itself, not by a signal;     (b) exits with the expected code;
  (c) prints output matching "message";    (d) finishes within timeout_s;
  (e) changes no file of the scratch directory but those in "outputs", and leaves the
      victim directory as it was (names, bytes, modes, times);
  (f) prints none of LibTorch's or Python's raw internals (internal asserts, C++ or
      Python tracebacks, glog lines, dispatcher dumps);
  (g) prints at most max_output_bytes (64 KiB);
  (h) leaves no process running (none carrying the run's marker in its environment,
      none in its process group, no pid listed in a "pidfiles" file alive).

  run_corpus.py --passcheck build/bin/passcheck --python .venv/bin/python [--case NAME ...]
                [--jobs 2] [--list] [--keep] [--verbose] [--corpus DIR]

Exit 0 when every case passes, 1 when any fails, 2 on bad arguments.
"""
import argparse
import concurrent.futures
import fnmatch
import hashlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CORPUS = os.path.join(HERE, "corpus")

DEFAULTS = {"exit": 2, "outputs": [], "timeout_s": 60, "memory_mb": 6000, "max_output_bytes": 64 * 1024,
            "file_size_mb": 1024, "env": {}, "generate": [], "symlinks": {}, "modes": {}, "pidfiles": []}
KNOWN_KEYS = set(DEFAULTS) | {"argv", "python", "message", "description"}

# Raw internals that must never reach the user: they mean an error escaped unworded.
INTERNALS = [
    ("an internal assert", re.compile(r"INTERNAL ASSERT")),
    ("a C++ exception backtrace", re.compile(r"Exception raised from")),
    ("a Python traceback", re.compile(r"Traceback \(most recent call last\)")),
    ("a glog line", re.compile(r"^\[?[IWEF]\d{4} \d\d:\d\d:\d\d", re.M)),
    ("std::terminate", re.compile(r"terminate called")),
    ("a stack frame", re.compile(r"frame #\d+")),
    ("c10::Error", re.compile(r"c10::Error")),
    ("a request to report a bug", re.compile(r"Please report a bug", re.I)),
    ("a dispatcher dump", re.compile(r"is only available for these backends|fburl\.com")),
    ("a shell's crash report", re.compile(r"Segmentation fault|core dumped")),
]

VICTIM_FILE_TEXT = "victim: no case may read into a tensor it writes, or write here at all.\n"
VICTIM_MTIME_NS = 978307200 * 10**9  # 2001-01-01: any write moves it
GRACE_S = 2.0  # how long survivors get to exit after the command returns
TORCHRUN_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_USE_AGENT_STORE",
                      "PASSCHECK_DIST_TIMEOUT_MS", "PASSCHECK_TEST_PASSES", "PASSCHECK_PYTHON_SERVER")


class CaseError(Exception):
    """A case directory or case.json that is itself wrong."""


def load_case(name):
    path = os.path.join(CORPUS, name, "case.json")  # CORPUS: --corpus, default suites/hostile/corpus
    try:
        with open(path) as f:
            spec = json.load(f)
    except (OSError, ValueError) as error:
        raise CaseError(f"{path}: {error}")
    unknown = set(spec) - KNOWN_KEYS
    if unknown:
        raise CaseError(f"{path}: unknown key(s) {', '.join(sorted(unknown))}")
    if ("argv" in spec) == ("python" in spec):
        raise CaseError(f"{path}: give exactly one of \"argv\" (passcheck's arguments) and \"python\" "
                        "(python3 -m passcheck_fx's)")
    if "message" not in spec:
        raise CaseError(f"{path}: \"message\" (a regex the output must match) is required")
    case = dict(DEFAULTS)
    case.update(spec)
    case["name"] = name
    case["dir"] = os.path.dirname(path)
    try:
        case["message_re"] = re.compile(case["message"], re.M)
    except re.error as error:
        raise CaseError(f"{path}: bad \"message\" regex: {error}")
    return case


def case_names():
    if not os.path.isdir(CORPUS):
        return []
    return sorted(d for d in os.listdir(CORPUS) if os.path.isfile(os.path.join(CORPUS, d, "case.json")))


def substitute(text, values):
    for key, value in values.items():
        text = text.replace("{" + key + "}", value)
    return text


def copy_case(case, scratch, values):
    """Copies the case directory (but case.json) into scratch, filling {victim} etc. in text files."""
    for root, dirs, files in os.walk(case["dir"]):
        rel = os.path.relpath(root, case["dir"])
        target_dir = os.path.normpath(os.path.join(scratch, rel))
        os.makedirs(target_dir, exist_ok=True)
        for name in files:
            if rel == "." and name == "case.json":
                continue
            source, target = os.path.join(root, name), os.path.join(target_dir, name)
            shutil.copy2(source, target)
            try:
                with open(source, encoding="utf-8") as f:
                    text = f.read()
            except (UnicodeDecodeError, OSError):
                continue
            filled = substitute(text, values)
            if filled != text:
                with open(target, "w", encoding="utf-8") as f:
                    f.write(filled)
                shutil.copystat(source, target)


def snapshot(root):
    """path -> (kind, size, mtime_ns, mode, link target, sha256) of everything under root."""
    entries = {}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                entries[rel] = ("link", 0, st.st_mtime_ns, stat.S_IMODE(st.st_mode), os.readlink(path), "")
            elif stat.S_ISDIR(st.st_mode):  # a directory's size and time follow its entries
                entries[rel] = ("dir", 0, 0, stat.S_IMODE(st.st_mode), "", "")
            else:
                digest = ""
                if stat.S_ISREG(st.st_mode) and st.st_size <= 256 * 1024 * 1024:
                    h = hashlib.sha256()
                    with open(path, "rb") as f:
                        for block in iter(lambda: f.read(1 << 20), b""):
                            h.update(block)
                    digest = h.hexdigest()
                entries[rel] = ("file", st.st_size, st.st_mtime_ns, stat.S_IMODE(st.st_mode), "", digest)
    return entries


def describe_change(before, after):
    if before is None:
        return "created"
    if after is None:
        return "removed"
    fields = ("kind", "size", "mtime", "mode", "link target", "content")
    return "changed " + ", ".join(f for f, a, b in zip(fields, before, after) if a != b)


def allowed(rel, patterns):
    return any(fnmatch.fnmatchcase(rel, p) for p in patterns)


def make_victim(victim):
    os.makedirs(victim)
    path = os.path.join(victim, "file")
    with open(path, "w") as f:
        f.write(VICTIM_FILE_TEXT)
    os.chmod(path, 0o644)
    os.utime(path, ns=(VICTIM_MTIME_NS, VICTIM_MTIME_NS))


def marked_processes(marker, pgid):
    """Live processes of this run: in its process group, or carrying its marker."""
    found = []
    needle = marker.encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        pid = int(entry)
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            state, process_group = fields[0], int(fields[2])
            if state in (b"Z", b"X"):
                continue
            mine = process_group == pgid
            if not mine:
                with open(f"/proc/{pid}/environ", "rb") as f:
                    mine = needle in f.read()
            if mine:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmdline = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
                found.append((pid, cmdline[:120]))
        except (OSError, IndexError, ValueError):
            continue
    return found


def pid_alive(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
        return state not in (b"Z", b"X")
    except (OSError, IndexError):
        return False


def read_pidfile(path):
    pids = []
    try:
        with open(path) as f:
            for token in f.read().split():
                if token.isdigit():
                    pids.append(int(token))
    except OSError:
        pass
    return pids


def run_case(case, args):
    """Runs one case; returns (passed, one-line summary, detail lines)."""
    name = case["name"]
    base = tempfile.mkdtemp(prefix=f"hostile-{name}-")
    scratch, victim = os.path.join(base, "scratch"), os.path.join(base, "victim")
    output_path = os.path.join(base, "output.txt")
    problems, detail = [], []
    rc, elapsed = None, 0.0
    try:
        os.makedirs(scratch)
        make_victim(victim)
        values = {"victim": victim, "scratch": scratch, "passcheck": args.passcheck, "python": args.python,
                  "repo": REPO}
        copy_case(case, scratch, values)
        if case["generate"]:
            gen = subprocess.run([args.python, os.path.join(HERE, "make_cases.py"), "--scratch", scratch,
                                  "--victim", victim, *case["generate"]],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
            if gen.returncode != 0:
                raise CaseError("generator failed: " + gen.stdout.decode(errors="replace")[-500:])
        for link, target in case["symlinks"].items():
            os.symlink(substitute(target, values), os.path.join(scratch, link))
        for path, mode in case["modes"].items():
            os.chmod(os.path.join(scratch, path), int(mode, 8))

        if "python" in case:
            command = [args.python, "-m", "passcheck_fx"] + [substitute(a, values) for a in case["python"]]
        else:
            command = [substitute(a, values) for a in case["argv"]]
            if not command or command[0] not in (args.passcheck, args.python):
                command = [args.passcheck] + command
        marker = uuid.uuid4().hex
        env = {k: v for k, v in os.environ.items() if k not in TORCHRUN_VARIABLES}
        env.update({"PASSCHECK_PYTHON": args.python, "PYTHONDONTWRITEBYTECODE": "1", "HOSTILE_CORPUS_RUN": marker,
                    "PYTHONPATH": os.pathsep.join(filter(None, [os.path.join(REPO, "python"),
                                                                os.environ.get("PYTHONPATH")]))})
        env.update({k: substitute(v, values) for k, v in case["env"].items()})
        limits = [f"--data={case['memory_mb'] * 1024 * 1024}", "--core=0",
                  f"--fsize={case['file_size_mb'] * 1024 * 1024}"]
        full = ["prlimit", *limits, "--", *command]
        detail.append("$ cd SCRATCH && " + " ".join(full))

        before, victim_before = snapshot(scratch), snapshot(victim)
        timed_out = False
        start = time.monotonic()
        with open(output_path, "wb") as out:
            process = subprocess.Popen(full, cwd=scratch, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                       stderr=subprocess.STDOUT, start_new_session=True)
            try:
                rc = process.wait(timeout=case["timeout_s"])
            except subprocess.TimeoutExpired:
                timed_out = True
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                rc = process.wait()
        elapsed = time.monotonic() - start

        # (h) processes left behind
        deadline = time.monotonic() + GRACE_S
        pidfile_pids = []
        while True:
            survivors = marked_processes(marker, process.pid)
            pidfile_pids = [p for f in case["pidfiles"] for p in read_pidfile(os.path.join(scratch, f))]
            alive = [p for p in pidfile_pids if pid_alive(p)]
            if (not survivors and not alive) or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        for f in case["pidfiles"]:
            if not read_pidfile(os.path.join(scratch, f)):
                problems.append(f"{f} holds no pid: the case did not start what it is about")
        if survivors or alive:
            pids = sorted({p for p, _ in survivors} | set(alive))
            shown = "; ".join(f"{p} {c}" for p, c in survivors[:3]) or ", ".join(map(str, alive))
            problems.append(f"{len(pids)} process(es) outlived the command ({shown})")
            for p in pids:
                try:
                    os.kill(p, signal.SIGKILL)
                except OSError:
                    pass
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

        # (a), (b), (d)
        if timed_out:
            problems.append(f"timed out after {case['timeout_s']} s (process group killed)")
        elif rc < 0:
            problems.append(f"killed by signal {-rc} ({signal.Signals(-rc).name if -rc in signal.valid_signals() else '?'})")
        elif rc != case["exit"]:
            hint = f" (signal {rc - 128}?)" if 128 < rc <= 128 + 64 else ""
            problems.append(f"exit {rc}{hint}, expected {case['exit']}")

        # (g), (c), (f)
        size = os.path.getsize(output_path)
        with open(output_path, "rb") as f:
            text = f.read(1024 * 1024).decode(errors="replace")
        if size > case["max_output_bytes"]:
            problems.append(f"printed {size} bytes (at most {case['max_output_bytes']})")
        if not case["message_re"].search(text):
            problems.append(f"output does not match /{case['message']}/")
        for what, pattern in INTERNALS:
            if pattern.search(text):
                problems.append(f"output holds {what}")

        # (e)
        after, victim_after = snapshot(scratch), snapshot(victim)
        for rel in sorted(set(before) | set(after)):
            if before.get(rel) != after.get(rel) and not allowed(rel, case["outputs"]):
                problems.append(f"scratch {rel}: {describe_change(before.get(rel), after.get(rel))}")
        for rel in sorted(set(victim_before) | set(victim_after)):
            if victim_before.get(rel) != victim_after.get(rel):
                problems.append(f"VICTIM {rel}: {describe_change(victim_before.get(rel), victim_after.get(rel))}")

        lines = text.splitlines()
        detail += ["  | " + (line if len(line) <= 200 else line[:200] + f"... ({len(line)} chars)")
                   for line in lines[:args.lines]]
        if len(lines) > args.lines:
            detail.append(f"  | ... ({len(lines)} lines, {size} bytes)")
    except CaseError as error:
        problems.append(str(error))
    except OSError as error:
        problems.append(f"could not run the case: {error}")
    finally:
        if args.keep:
            detail.append(f"  kept {base}")
        else:
            for root, dirs, files in os.walk(base):  # read-only files and directories go too
                for d in dirs:
                    p = os.path.join(root, d)
                    if not os.path.islink(p):
                        os.chmod(p, 0o755)
            shutil.rmtree(base, ignore_errors=True)
    where = f"exit {rc}, {elapsed:.2f} s" if rc is not None else "not run"
    if problems:
        return False, f"FAIL {name}: {'; '.join(problems)} ({where})", detail
    return True, f"PASS {name} ({where})", detail


def main():
    global CORPUS
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--passcheck", help="the passcheck binary")
    parser.add_argument("--python", default=sys.executable,
                        help="the Python with the build's torch (runs Python passes, passcheck_fx and the generators)")
    parser.add_argument("--case", action="append", default=[], help="run only this case (repeatable)")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument("--jobs", type=int, default=1, help="cases run side by side (default 1)")
    parser.add_argument("--keep", action="store_true", help="keep each case's scratch and victim directories")
    parser.add_argument("--verbose", action="store_true", help="show the command and output of passing cases too")
    parser.add_argument("--lines", type=int, default=6, help="output lines shown per case (default 6)")
    parser.add_argument("--corpus", default=CORPUS, help="the corpus directory (default: suites/hostile/corpus)")
    args = parser.parse_args()
    CORPUS = os.path.abspath(args.corpus)

    names = case_names()
    if args.list:
        for name in names:
            try:
                print(f"{name:44} {load_case(name).get('description', '')}")
            except CaseError as error:
                print(f"{name:44} BROKEN: {error}")
        return 0
    if not args.passcheck:
        parser.error("--passcheck is required")
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    if not shutil.which("prlimit"):
        print("run_corpus.py: prlimit (util-linux) is not installed", file=sys.stderr)
        return 2
    args.passcheck = os.path.abspath(args.passcheck)
    args.python = os.path.abspath(args.python) if os.sep in args.python else shutil.which(args.python) or args.python
    if not os.access(args.passcheck, os.X_OK):
        print(f"run_corpus.py: {args.passcheck} is not an executable", file=sys.stderr)
        return 2
    unknown = [n for n in args.case if n not in names]
    if unknown:
        print(f"run_corpus.py: no case {', '.join(unknown)} in {CORPUS} (--list names them)", file=sys.stderr)
        return 2
    selected = args.case or names
    cases, broken = [], []
    for name in selected:
        try:
            cases.append(load_case(name))
        except CaseError as error:
            broken.append(f"FAIL {name}: {error}")
    for line in broken:
        print(line, flush=True)

    passed = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(run_case, case, args) for case in cases]
        for future in futures:
            ok, line, detail = future.result()
            passed += ok
            print(line, flush=True)
            if not ok or args.verbose:
                for d in detail:
                    print("    " + d, flush=True)
    failed = len(selected) - passed
    print(f"hostile corpus: {passed} passed, {failed} failed, {len(selected)} cases")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
