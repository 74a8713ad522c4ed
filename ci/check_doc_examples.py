#!/usr/bin/env python3
"""Runs every passcheck example of README.md and docs/*.md, so a doc cannot drift.

Usage: check_doc_examples.py PASSCHECK_BINARY [DOCUMENT ...]
(every document by default; CTest runs one test per document, so they run side by side)

1. Commands: every line of a fenced code block that starts with `passcheck` (or
   `build/bin/passcheck`), continuation lines joined, is run in one scratch
   directory per document, in the order written (so `trace --out g.txt` makes the g.txt
   a later line reads). A placeholder repro path (`repros/case-3-....repro`) becomes a
   repro captured first. Long runs are cut to a smoke size (--seconds 3, --cases 3,
   --steps 1, fuzz --minimize-seconds 5, bench --repeats 1 --warmup 0): the options and
   their values are what the doc promises, the length is not. Each must exit 0, or 1
   where its comment says "exit 1"; never 2 (the doc names something the tool rejects)
   nor a signal.
   Placeholder repros are captured with the test pass crash-on-odd, so they still fail.
   A line with a literal `...` elision or a shell variable is not run: each of its
   options must appear in that subcommand's --help instead.
2. Synopses: every inline `passcheck SUB --option ...` in prose: SUB exists and each
   --option appears in `passcheck SUB --help`.
3. Pipelines: every ```pipeline block line and every --pipeline value of the commands
   must be accepted by `passcheck passes --pipeline` (named pipelines composing).
Exit 0 when all hold, 1 listing each example that failed. PASSCHECK_DOC_TIMES=1 prints
each command's seconds on stderr.
"""
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMMAND = re.compile(r"^\s*(?:\$ )?(?:build/bin/)?passcheck (.*)$")
SMOKE = [
    (re.compile(r"--seconds \d+"), "--seconds 3"),
    (re.compile(r"--cases \d+"), "--cases 3"),
    (re.compile(r"--steps \d+"), "--steps 1"),
    (re.compile(r"--repeats \d+"), "--repeats 1"),
    (re.compile(r"--minimize-seconds [0-9.]+"), "--minimize-seconds 5"),
]
RUN_TIMEOUT_S = 300


def documents():
    return [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))


def fenced_blocks(text):
    for m in re.finditer(r"```([a-z]*)\n(.*?)```", text, re.S):
        yield m.group(1), m.group(2)


def commands_of(block):
    """(command text, comment) per passcheck line, continuations joined."""
    lines = block.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        m = COMMAND.match(line)
        i += 1
        if not m:
            continue
        text = m.group(1)
        while text.rstrip().endswith("\\") and i < len(lines):
            text = text.rstrip()[:-1] + " " + lines[i].strip()
            i += 1
        command, _, comment = text.partition("  #")
        if "#" in command and not comment:
            command, _, comment = text.partition(" # ")
        yield command.strip(), comment.strip()


def run(binary, args, cwd):
    try:
        started = time.monotonic()
        p = subprocess.run([binary] + args, cwd=cwd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
        if os.environ.get("PASSCHECK_DOC_TIMES"):
            print(f"{time.monotonic() - started:6.1f} s  passcheck {' '.join(args)}", file=sys.stderr)
        return p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired:
        return None, f"did not finish within {RUN_TIMEOUT_S} s"


help_cache = {}


def help_of(binary, subcommand):
    if subcommand not in help_cache:
        code, out = run(binary, [subcommand, "--help"], ROOT)
        help_cache[subcommand] = out if code == 0 else None
    return help_cache[subcommand]


def check_synopsis(binary, where, words, failures):
    if not words:
        return
    subcommand = words[0]
    text = help_of(binary, subcommand)
    if text is None:
        failures.append(f"{where}: `passcheck {subcommand}`: no such subcommand")
        return
    for word in words[1:]:
        for option in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", word):
            if re.search(re.escape(option) + r"\b", text) is None:
                failures.append(f"{where}: `passcheck {' '.join(words)}`: {subcommand} has no option {option}")


def check_pipeline(binary, where, pipeline, failures, mutants=False):
    code, out = run(binary, ["passes", "--pipeline", pipeline] + (["--mutants"] if mutants else []), ROOT)
    if code != 0:
        failures.append(f"{where}: pipeline {pipeline!r} is rejected: {out.strip()}")


def check_document(binary, doc, failures):
    """Runs one document's examples; returns (commands run, synopses checked, pipelines)."""
    ran = checked = pipelines = 0
    name = os.path.relpath(doc, ROOT)
    text = open(doc, encoding="utf-8").read()
    scratch = tempfile.mkdtemp(prefix="passcheck-doc-")  # removed unless an example fails
    failures_before = len(failures)
    placeholder = None
    for lang, block in fenced_blocks(text):
        if lang == "pipeline":
            for line in block.splitlines():
                if line.strip():
                    check_pipeline(binary, name, line.strip(), failures)
                    pipelines += 1
            continue
        for command, comment in commands_of(block):
            where = f"{name}: `passcheck {command}`"
            try:
                words = shlex.split(command)
            except ValueError as e:
                failures.append(f"{where}: not a command line: {e}")
                continue
            mutants = "--mutants" in words
            for i, w in enumerate(words[:-1]):
                if w == "--pipeline" and "$" not in words[i + 1]:
                    check_pipeline(binary, where, words[i + 1], failures, mutants)
                    pipelines += 1
            if "...." in command:
                if placeholder is None:
                    placeholder = "repros/placeholder-captured.repro"
                    os.makedirs(os.path.join(scratch, "repros"), exist_ok=True)
                    # A repro that still fails (a test pass crashing on mlp's odd node
                    # count), so repro and minimize have something to do.
                    run(binary, ["capture", "--model", "mlp", "--pipeline", "crash-on-odd", "--test-passes",
                                 "--out", placeholder], scratch)
                command = re.sub(r"\S*\.\.\.\.\S*", placeholder, command)
                words = shlex.split(command)
            if "..." in command or "$" in command or "|" in command.replace("'", "").split("#")[0]:
                for part in command.split("&&"):
                    part_words = [w for w in shlex.split(part) if w != "..."]
                    if part_words and part_words[0] == "passcheck":
                        part_words = part_words[1:]
                    check_synopsis(binary, where, part_words, failures)
                    checked += 1
                continue
            for pattern, replacement in SMOKE:
                command = pattern.sub(replacement, command)
            # A failure a fuzz command finds is minimized for up to a minute by default; the
            # doc promises the minimizing, a smoke run bounds it as the suites do.
            if words[0] == "fuzz" and "--no-minimize" not in command and "--minimize-seconds" not in command:
                command += " --minimize-seconds 5"
            if words[0] == "bench" and "--warmup" not in command:
                command += " --warmup 0" + ("" if "--repeats" in command else " --repeats 1")
            parts = [shlex.split(part) for part in command.split("&&")]
            parts = [p[1:] if p and p[0] == "passcheck" else p for p in parts]
            for args in parts:
                code, out = run(binary, args, scratch)
                ran += 1
                allowed = {0, 1} if "exit 1" in comment else {0}
                if code not in allowed:
                    shown = "timeout" if code is None else f"exit {code}"
                    failures.append(f"{where}: {shown} (expected {sorted(allowed)}):\n    " +
                                    "\n    ".join(out.strip().splitlines()[-6:]))
                    break
    for m in re.finditer(r"`passcheck ([a-z][^`]*)`", text):
        words = m.group(1).split()
        check_synopsis(binary, name, words, failures)
        checked += 1
    if len(failures) == failures_before:
        shutil.rmtree(scratch, ignore_errors=True)
    else:
        failures.append(f"{name}: the commands' files are kept in {scratch}")
    return ran, checked, pipelines


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    binary = os.path.abspath(sys.argv[1])
    docs = [os.path.abspath(d) for d in sys.argv[2:]] or documents()
    for doc in docs:
        if not os.path.isfile(doc):
            print(f"check_doc_examples.py: no document {doc}", file=sys.stderr)
            return 2
    failures = []
    ran = checked = pipelines = 0
    for doc in docs:
        r, c, p = check_document(binary, doc, failures)
        ran, checked, pipelines = ran + r, checked + c, pipelines + p
    for failure in failures:
        print(failure)
    print(f"{ran} documented commands run, {checked} synopses checked against --help, {pipelines} pipelines "
          f"validated; {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
