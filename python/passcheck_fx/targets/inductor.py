"""Inductor's FX passes as campaign targets, run in the context inductor's compile_fx
gives them: a TracingContext of the graph's fake mode and `V.fake_mode` set (callers.py,
kinds `inductor-post-grad` and `inductor-joint-graph`)."""
from torch._inductor.fx_passes import post_grad as _post_grad

from passcheck_fx.callers import caller


@caller("inductor-post-grad")
def remove_noop_ops(gm):
    """`remove_noop_ops(graph)`: removes clones and aliases that change nothing, keyed on
    meta["val"] (sizes, strides and storages)."""
    _post_grad.remove_noop_ops(gm.graph)
    gm.recompile()
    return gm
