"""Shared by the torchtitan suite's scripts: the passcheck binary (argv[1]), the source
tree's python/ on the import path, and failing with a message."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SOURCE_DIR, "python"))
sys.path.insert(0, HERE)


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
