"""Upstream bug (torchtitan 0.3.0 graph_trainer on torch 2.15): graph EP chunking in seq
mode with early gradient accumulation computes wrong gradients.

With `--compile.ep_overlap.chunk_dim seq` and early accumulation on (the default,
`optimize_grad_live_out=True`), `ep_chunk_pass._materialization_boundary` walks a backward
live-out back through every view (`_is_materialization_suffix_node`: any view is a safe
suffix) and `_materialize_full_live_out` joins the two chunks before the view, replaying
the view on the joined value. For the shared experts' input gradients the boundary is the
flattened token matrix: each chunk's is [B*S/2, D] (rows b*S/2 + s), the halves are joined
with cat on dim 0 and viewed to [B, S, D] ([2, u0, 256]). cat(dim 0) is chunk-major while
the flattened order is b*S + s, so the view puts chunk 1's tokens of batch 0 where batch
1's first half belongs: wrong rows, wrong gradients from there on. A cat moves across a
view only when the elements before the chunked extent agree on both sides (true in batch
mode, where the chunked extent leads). Fix: stop the walk at a view that changes them
(with that, early accumulation equals eager chunking bit for bit here). Latent behind the
lint failure of ep_chunk_default_config_fails_lint.py: when apply_chunk_pass hits it, it
is patched around (passcheck_fx.titan.ep_chunk's copy of the function with its insertion
point fixed) and the pass rerun.

This script: deepseek_v3's debug model cut to its first two blocks (one dense, one MoE),
batch 2 x seq 4, traced by graph_trainer's tracer with the EP-overlap trace preparers,
chunked by graph_trainer's chunk passes in seq mode (module_fqn "layers.*.moe") with and
without early accumulation; both run against graph_trainer's eager chunking
(`ep_eager_chunk`, the definition of chunking) of the same model and batch: loss and every
gradient. Exit 1 while early accumulation gives gradients off by more than rounding
(relative error above 1e-4; without it the graph must equal eager chunking bit for bit),
0 once early accumulation agrees with eager chunking too, 2 on anything else.

    python3 suites/torchtitan/upstream_bugs/ep_chunk_seq_early_accumulation_wrong_gradients.py
"""
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import support  # noqa: E402  (puts the source tree's python/ on the path)
warnings.filterwarnings("ignore", message="In CPU autocast")

MODE = "seq"
TOLERANCE = 1e-4  # relative to each output's largest magnitude; rounding differences are ~1e-7


def main():
    start = time.perf_counter()
    try:
        import torch
        torch.set_num_threads(1)  # tiny tensors: more threads only wait on each other (and on a busy machine)
        from passcheck_fx.titan import ep_chunk
        step = ep_chunk.trace(MODE, batch=2, seq=4, n_layers=2)
        inputs = [t.detach().clone() for t in step.flat_inputs()]
        names = ep_chunk._output_names(step)
        eager_out, wrapped, _ = ep_chunk.eager_chunked_outputs(step, MODE)
        reference = ep_chunk._copy_gm(step.gm)
        ep_chunk.chunk(step, reference, MODE, early_accumulation=False)
        control = ep_chunk._compare(ep_chunk._run(reference, inputs), eager_out, names)
    except Exception as error:  # noqa: BLE001 - the repro itself broke
        print(f"UNEXPECTED: {type(error).__name__}: {str(error)[:400]}")
        return 2
    print(f"deepseek_v3 debug model, 2 blocks, batch 2 x seq 4; eager chunking wraps {wrapped}")
    print(f"seq chunking, early accumulation off: {control['differ_count']} of {control['compared']} outputs "
          f"differ from eager chunking")
    if not control["equal"]:
        print("UNEXPECTED: the supported configuration does not equal eager chunking bit for bit")
        return 2

    early = ep_chunk._copy_gm(step.gm)
    lint_patched = False
    try:
        ep_chunk.chunk(step, early, MODE, early_accumulation=True)
    except RuntimeError as error:
        if "used before it has been defined" not in str(error):
            print(f"UNEXPECTED: apply_chunk_pass raised {type(error).__name__}: {str(error)[:400]}")
            return 2
        lint_patched = True  # ep_chunk_default_config_fails_lint: chunk again with its insertion point fixed
        early = ep_chunk._copy_gm(step.gm)
        ep_chunk.chunk(step, early, MODE, early_accumulation=True, fixed=True)
    except Exception as error:  # noqa: BLE001
        print(f"UNEXPECTED: apply_chunk_pass raised {type(error).__name__}: {str(error)[:400]}")
        return 2
    early_out = ep_chunk._run(early, inputs)
    cmp = ep_chunk._compare(early_out, eager_out, names)
    worst, worst_name = 0.0, None
    for name, x, y in zip(names, early_out, eager_out):
        error = float((x.double() - y.double()).abs().max()) / (float(y.abs().max()) or 1.0)
        if error > worst:
            worst, worst_name = error, name
    print(f"seq chunking, early accumulation on{' (lint bug patched around)' if lint_patched else ''}: "
          f"{cmp['differ_count']} of {cmp['compared']} outputs differ from eager chunking, largest relative "
          f"error {worst:.3g} ({worst_name}) ({time.perf_counter() - start:.1f} s)")
    if worst > TOLERANCE:
        for view in ep_chunk.layout_breaking_suffixes(early)[:2]:
            print(f"  cat moved across a reordering view: {view}")
        print("BUG: the chunks' cat on dim 0 of the flattened token matrix is viewed to [B, S, D]: tokens in "
              "the wrong rows")
        return 1
    print("early accumulation agrees with eager chunking" + (" bit for bit" if cmp["equal"] else " up to rounding")
          + ": fixed")
    return 0



support.exit_with_repro_verdict(main)
