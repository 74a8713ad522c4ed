"""Upstream bug (torchtitan 0.3.0 graph_trainer on torch 2.15): graph EP chunking fails
its own graph lint in graph_trainer's default configuration.

With `--compile.ep_overlap.enabled --compile.ep_overlap.strategy graph` and the default
early gradient accumulation (`disable_early_grad_accumulation=False`: passes.py calls
`ep_chunk_pass.apply_chunk_pass(..., optimize_grad_live_out=True)`), a backward live-out
reached through a view is materialized before the view (`_materialization_boundary`) and
the view is then rebuilt on the full value by `_materialize_suffix_from_full_boundary`.
That function creates the view's full-shape SymInt nodes (`_materialize_symint_args`) at
the graph's current insertion point, before the region's first full user, but the view
itself `inserting_after` the materialized cat/add: the view reads `sym_size` nodes defined
after it, and `apply_chunk_pass`'s `gm.graph.lint()` raises "... used before it has been
defined". Hit in batch and seq mode by the shared experts' input gradients (the [B*S, D]
token-matrix mm viewed back to [B, S, D]). Fix: create the shape nodes and the view
together, in order, right after the materialized value.

This script: deepseek_v3's debug model cut to its first two blocks (one dense, one MoE),
batch 2 x seq 4, traced by graph_trainer's tracer with the EP-overlap trace preparers,
then graph_trainer's chunk passes as its pipeline runs them with the default EpOverlapConfig
(chunk_dim "batch", module_fqn "layers.*", early accumulation on; the roots from the EP
annotations, as on one rank). Exit 1 while the pass fails its lint with a node used before
its definition, 0 once the pass succeeds and the chunked graph runs, 2 on anything else.

    python3 suites/torchtitan/upstream_bugs/ep_chunk_default_config_fails_lint.py
"""
import os
import re
import sys
import time
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import support  # noqa: E402  (puts the source tree's python/ on the path)
warnings.filterwarnings("ignore", message="In CPU autocast")


def main():
    start = time.perf_counter()
    try:
        import torch
        torch.set_num_threads(1)  # tiny tensors: more threads only wait on each other (and on a busy machine)
        from passcheck_fx.titan import ep_chunk
        step = ep_chunk.trace("batch", batch=2, seq=4, n_layers=2)
        inputs = [t.detach().clone() for t in step.flat_inputs()]
        gm = step.gm
        print(f"traced: deepseek_v3 debug model, 2 blocks, batch 2 x seq 4, {len(gm.graph.nodes)} fx nodes, "
              f"symbol {ep_chunk.chunk_symbol(gm)[:2]}")
    except Exception as error:  # noqa: BLE001 - the repro itself broke
        print(f"UNEXPECTED: tracing failed: {type(error).__name__}: {error}")
        return 2
    try:
        roots = ep_chunk.chunk(step, gm, "batch", early_accumulation=True)
    except RuntimeError as error:
        m = re.search(r"Argument '([^']+)' of Node '([^']+)' was used before it has been defined", str(error))
        if not m:
            print(f"UNEXPECTED: apply_chunk_pass raised {type(error).__name__}: {str(error)[:400]}")
            return 2
        arg, user = m.groups()
        position = {n.name: i for i, n in enumerate(gm.graph.nodes)}
        node = next(n for n in gm.graph.nodes if n.name == user)
        print(f"apply_chunk_pass(mode='batch', optimize_grad_live_out=True) failed graph.lint(): "
              f"{str(error).splitlines()[0]}")
        print(f"  {user} = {node.target}({', '.join(str(a) for a in node.args)}) is node #{position[user]}; "
              f"it reads {arg}, node #{position.get(arg)} (role {node.meta.get('chunked_region_role')!r}, "
              f"{time.perf_counter() - start:.1f} s)")
        print("BUG: _materialize_suffix_from_full_boundary creates the view's shape nodes after the view")
        return 1
    except Exception as error:  # noqa: BLE001
        print(f"UNEXPECTED: apply_chunk_pass raised {type(error).__name__}: {str(error)[:400]}")
        return 2
    try:
        outputs = ep_chunk._run(gm, inputs)
    except Exception as error:  # noqa: BLE001
        print(f"UNEXPECTED: the pass succeeded on roots {roots} but the chunked graph does not run: "
              f"{type(error).__name__}: {str(error)[:300]}")
        return 2
    print(f"apply_chunk_pass succeeded on roots {roots}: the graph lints and runs ({len(outputs)} outputs, "
          f"{time.perf_counter() - start:.1f} s): fixed")
    return 0



support.exit_with_repro_verdict(main)
