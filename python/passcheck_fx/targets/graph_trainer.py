"""torchtitan graph_trainer's passes as campaign targets. graph_trainer calls each pass as
`pass(gm, example_inputs)` on the GraphModule its tracer made, whose nodes carry
`meta["val"]` FakeTensors: the bridge hands the same (callers.py, kind `graph_trainer`).
Importing this module imports graph_trainer (once, in the campaign's fork server)."""
from torchtitan.experiments.graph_trainer import remove_noop_passes as _remove_noop_passes

from passcheck_fx.callers import caller, example_inputs


@caller("graph_trainer")
def remove_identity_view(gm):
    """`remove_identity_view_pass`: drops view/reshape/_unsafe_view nodes whose
    meta["val"] shape equals their input's."""
    return _remove_noop_passes.remove_identity_view_pass(gm, example_inputs(gm))


@caller("graph_trainer")
def remove_identity_slice(gm):
    """`remove_identity_slice_pass`: drops slices that keep the whole dimension."""
    return _remove_noop_passes.remove_identity_slice_pass(gm, example_inputs(gm))


@caller("graph_trainer")
def remove_detach(gm):
    """`remove_detach_pass`."""
    return _remove_noop_passes.remove_detach_pass(gm, example_inputs(gm))
