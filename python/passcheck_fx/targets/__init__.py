"""Campaign targets: passes people ship, wrapped so `passcheck fuzz --python-pass` runs
each as its real caller does (docs/python-passes.md, "What the pass is handed"). One
module per upstream package; each wrapper is marked with the caller it expects.

    passcheck fuzz --python-pass passcheck_fx.targets.graph_trainer:remove_identity_view
    passcheck fuzz --python-pass passcheck_fx.targets.inductor:remove_noop_ops
"""
