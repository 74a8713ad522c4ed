"""Python passes that misbehave in the ways the worker must report (suites/python_pass/
fuzz_test.py): raising, returning something that is not a GraphModule, crashing, and hanging."""
import os
import time


def raises(gm):
    raise ValueError("this pass always fails")


def returns_a_string(gm):
    return "not a graph module"


def crashes(gm):
    os.abort()


def hangs(gm):
    time.sleep(3600)


not_callable = 42
