"""Shared by the torchtitan suite's scripts: the passcheck binary (argv[1]), the source
tree's python/ on the import path, and failing with a message."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SOURCE_DIR, "python"))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(SOURCE_DIR, "suites", "support"))
import scratch_root  # noqa: E402,F401  (temporary directories under a root removed at exit)


def passcheck_binary():
    if len(sys.argv) > 1:
        return os.path.abspath(sys.argv[1])
    return os.environ.get("PASSCHECK_BINARY", os.path.join(SOURCE_DIR, "build", "bin", "passcheck"))


def check(condition, message):
    if not condition:
        print("FAILED: " + message, file=sys.stderr)
        sys.exit(1)


def show(title, facts):
    print(title)
    for key, value in facts.items():
        print(f"  {key}: {value}")


def exit_with_repro_verdict(main):
    """Runs a repro script's main() and exits with its code: 1 the bug is there, 0 fixed.
    An uncaught exception would exit 1 too and read as "still buggy": it exits 2."""
    try:
        code = main()
    except Exception as error:  # noqa: BLE001 - anything unexpected is not the bug
        import traceback
        traceback.print_exc()
        print(f"UNEXPECTED: {type(error).__name__}: {str(error)[:400]}")
        code = 2
    sys.exit(code)
