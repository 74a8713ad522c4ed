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


# ---- what the bridge hands a pass (suites/python_pass/hand_over_test.py) ---------------

from passcheck_fx.callers import caller  # noqa: E402


@caller("fx", requires=("process_group",))
def needs_a_process_group(gm):
    """Declares a need the bridge cannot meet yet: refused before any case (exit 2)."""
    return None


@caller("inductor-post-grad")
def checks_inductor_context(gm):
    """Fails unless it runs as compile_fx runs a post-grad pass: V.fake_mode set, a
    TracingContext of that mode active, and every value's meta["val"] a FakeTensor of it."""
    import torch
    from torch._guards import TracingContext
    from torch._inductor.virtualized import V
    mode = V.fake_mode
    context = TracingContext.try_get()
    assert context is not None and context.fake_mode is mode, "no TracingContext of V.fake_mode"
    for node in gm.graph.nodes:
        if node.op in ("placeholder", "call_function") and hasattr(node.meta.get("tensor_meta"), "dtype"):
            val = node.meta.get("val")
            assert isinstance(val, torch.Tensor) and val.fake_mode is mode, "meta['val'] of %s" % node.name
    return None
