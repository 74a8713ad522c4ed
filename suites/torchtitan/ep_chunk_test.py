#!/usr/bin/env python3
"""torchtitan graph_trainer's EP chunk pass on deepseek_v3 (CPU), verified bit for bit.

  ep_chunk_test.py PASSCHECK [batch|seq|all] [--mode batch|seq|all] [--workdir DIR] [--json FILE]

For each mode, passcheck_fx.titan.ep_chunk.verify_ep_chunk traces the step the way
graph_trainer does with graph EP chunking on, runs graph_trainer's chunk pass, and checks:

  - the chunk roots are the modules graph_trainer's eager chunking wraps (the MoE layers);
  - the graph-chunked step equals graph_trainer's eager chunking bit for bit (loss and every
    gradient), graph_trainer's supported configuration (disable_early_grad_accumulation);
  - passcheck's executor computes torch's bits on the exported chunked graph;
  - passcheck's own chunk pass on the exported unchunked (symbolic) graph chunks the same
    regions, proves every claim it records with Z3, and equals eager chunking bit for bit;
  - mutants (one chunk's gradient partial dropped, the halves of a forward cat swapped) are
    caught: the comparison is not vacuous;
  - every difference found is classified (bug in theirs / bug in ours / difference in
    semantics); an unclassified one fails the test.

Known bugs in graph_trainer are printed (KNOWN lines), not failures. Exit 0 when every
property held, 1 otherwise (the failed properties are printed), 2 on bad usage.
"""
import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))

import support  # noqa: E402,F401  (its scratch_root: temporary files removed at exit)
import torch  # noqa: E402

from passcheck_fx.titan import ep_chunk  # noqa: E402


def check_mode(result):
    """The properties that must hold; returns the failed ones (strings)."""
    failed = []

    def need(condition, message):
        if not condition:
            failed.append(message)

    mode = result["mode"]
    need(result.get("roots"), f"{mode}: graph_trainer found no chunk roots")
    need(result.get("roots_equal_eager_wrapped"),
         f"{mode}: chunk roots {result.get('roots')} differ from eager chunking's wrapped modules "
         f"{result.get('eager_chunking', {}).get('wrapped_modules')}")
    gt = result.get("gt", {})
    need(gt.get("regions") == 2 * len(result.get("roots") or []),
         f"{mode}: expected a forward and a backward region per root, got {gt.get('regions')}")
    need(gt.get("split_live_ins", 0) > 0 and gt.get("materialized_cat", 0) > 0 and gt.get("materialized_add", 0) > 0,
         f"{mode}: the chunked graph has no split/cat/add: {gt}")
    cmp = result.get("chunked_vs_eager_chunked", {})
    need(cmp.get("equal"), f"{mode}: graph-chunked != eager-chunked in {cmp.get('differ_count')} outputs: "
                           f"{cmp.get('differ', [])[:5]}")
    need(cmp.get("compared") == result.get("trace", {}).get("outputs"), f"{mode}: not every output compared")
    need(result.get("eager_chunking", {}).get("same_initial_state"), f"{mode}: eager model state differs")
    pc = result.get("passcheck_checks")
    need(pc is not None, f"{mode}: the passcheck checks did not run ({result.get('notes')})")
    if pc is not None:
        run = pc.get("run_gt_chunked", {})
        need(run.get("ok") and run.get("vs_torch", {}).get("equal"),
             f"{mode}: passcheck run of graph_trainer's chunked graph != torch: {run}")
        ours = pc.get("chunk", {}).get("no_early", {})
        need(ours.get("prove", {}).get("exit") == 0, f"{mode}: passcheck prove: {ours.get('prove')}")
        need(ours.get("vs_eager_chunked", {}).get("equal"),
             f"{mode}: passcheck's chunk != eager chunking: {ours.get('vs_eager_chunked')}")
        need(ours.get("vs_graph_trainer", {}).get("regions_equal"),
             f"{mode}: passcheck and graph_trainer chunk different regions: {ours.get('vs_graph_trainer')}")
        early = pc.get("chunk", {}).get("early", {})
        need(early.get("prove", {}).get("exit") == 0, f"{mode}: passcheck prove (early accumulation): {early.get('prove')}")
        need(pc.get("prove_gt_split_claim_multiple_of_2", {}).get("exit") == 0,
             f"{mode}: graph_trainer's symbolic chunked graph with multiple_of 2 is not proved: "
             f"{pc.get('prove_gt_split_claim_multiple_of_2')}")
    mutants = result.get("mutants", {})
    need(set(mutants) == set(ep_chunk.MUTANTS), f"{mode}: mutants missing: {sorted(set(ep_chunk.MUTANTS) - set(mutants))}")
    for name, entry in mutants.items():
        need(entry.get("caught_by_torch") or entry.get("caught_by_passcheck_equiv") or entry.get("caught_by_passcheck_run"),
             f"{mode}: mutant {name} NOT caught: {entry}")
        for key in ("caught_by_torch", "caught_by_passcheck_equiv", "caught_by_passcheck_run"):
            need(entry.get(key, True), f"{mode}: mutant {name}: {key} is False: {entry}")
    for difference in result.get("differences", []):
        need(difference["classification"] in ("bug in theirs", "bug in ours", "difference in semantics"),
             f"{mode}: unclassified difference: {difference['what']}")
    for problem in result.get("problems", []):
        failed.append(f"{mode}: {problem}")
    return failed


def summary(result):
    mode, t = result["mode"], result.get("times_s", {})
    gt, trace = result.get("gt", {}), result.get("trace", {})
    lines = [f"== {mode} (module_fqn {result['module_fqn']}, batch {result['batch']}, seq {result['seq']}, "
             f"symbol {result.get('symbol')}, threads {result['threads']})",
             f"  trace {t.get('trace')} s: {trace.get('tensor_ops')} tensor ops ({trace.get('fx_nodes')} fx nodes), "
             f"{trace.get('outputs')} outputs; roots {result.get('roots')}",
             f"  graph_trainer default config (early accumulation): "
             + ("ok" if result.get("gt_default", {}).get("ok")
                else f"FAILS: {result.get('gt_default', {}).get('error', '')[:110]}"),
             f"  graph_trainer chunk (early accumulation off) {t.get('gt_chunk')} s: tensor ops "
             f"{gt.get('nodes_before', {}).get('tensor_ops')} -> {gt.get('nodes_after', {}).get('tensor_ops')}, "
             f"regions {gt.get('regions')}, splits {gt.get('split_live_ins')}, cat {gt.get('materialized_cat')}, "
             f"add {gt.get('materialized_add')}"]
    c = result.get("chunked_vs_eager_chunked", {})
    u = result.get("chunked_vs_unchunked", {})
    lines.append(f"  graph-chunked == eager-chunked: {c.get('equal')} ({c.get('compared')} tensors); "
                 f"== unchunked: {u.get('equal')} ({u.get('differ_count')} differ, max |diff| {u.get('max_abs_diff', 0):.3g})")
    fixed = result.get("gt_early_fixed")
    if fixed and fixed.get("ok"):
        e = fixed["vs_eager_chunked"]
        lines.append(f"  graph_trainer early accumulation with the insertion fix: == eager-chunked {e['equal']} "
                     f"({e.get('differ_count')} differ, max rel {fixed.get('max_rel_diff_vs_eager_chunked', 0):.3g}); "
                     f"tensor ops {fixed['nodes_after']['tensor_ops']}")
    pc = result.get("passcheck_checks")
    if pc:
        run = pc.get("run_gt_chunked", {})
        lines.append(f"  passcheck run of graph_trainer's chunked graph == torch: "
                     f"{run.get('vs_torch', {}).get('equal')} ({t.get('passcheck_run_gt_chunked')} s)"
                     + ("; deterministic_scatter_add substituted" if pc.get("scatter_substitution") else ""))
        for variant in ("no_early", "early"):
            e = pc.get("chunk", {}).get(variant, {})
            d = e.get("decisions", {})
            lines.append(f"  passcheck chunk ({variant}): ops {e.get('nodes')}, regions {d.get('regions')}, splits "
                         f"{d.get('split_live_ins')}, cat {d.get('materialized_cat')}, add {d.get('materialized_add')}; "
                         f"prove: {e.get('prove', {}).get('report', '')[:80]}; == eager-chunked "
                         f"{e.get('vs_eager_chunked', {}).get('equal')}, == graph_trainer "
                         f"{e.get('vs_graph_trainer_chunked', {}).get('equal')}")
        lines.append(f"  graph_trainer's split claim over its own symbol range: "
                     f"{pc.get('prove_gt_split_claim_their_range', {}).get('report', '')[:150]}")
    for name, entry in result.get("mutants", {}).items():
        caught = [label for key, label in (("caught_by_torch", "torch compare"), ("caught_by_passcheck_equiv", "passcheck equiv"),
                                           ("caught_by_passcheck_run", "passcheck run + compare")) if entry.get(key)]
        lines.append(f"  mutant {name} ({entry.get('mutation') or entry.get('passcheck_mutation')}): caught by "
                     f"{', '.join(caught) or 'NOTHING'}")
    for difference in result.get("differences", []):
        tag = "KNOWN" if difference["classification"] == "bug in theirs" else "DIFF "
        lines.append(f"  {tag} [{difference['classification']}] {difference['what'][:260]}")
    for note in result.get("notes", []):
        lines.append(f"  note: {note[:200]}")
    lines.append(f"  total {sum(v for k, v in t.items()):.1f} s measured steps")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("passcheck")
    parser.add_argument("mode_arg", nargs="?", choices=["batch", "seq", "all"], metavar="MODE",
                        help="as --mode (CTest passes it so)")
    parser.add_argument("--mode", default="all", choices=["batch", "seq", "all"])
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--json", default=None, help="write the result dicts here")
    args = parser.parse_args()
    if not (os.path.isfile(args.passcheck) and os.access(args.passcheck, os.X_OK)):
        print(f"ep_chunk_test: {args.passcheck} is not an executable passcheck binary", file=sys.stderr)
        return 2
    mode = args.mode_arg or args.mode
    modes = ep_chunk.MODES if mode == "all" else (mode,)
    failed, results = [], {}
    for mode in modes:
        start = time.perf_counter()
        workdir = os.path.join(args.workdir, mode) if args.workdir else None
        try:
            result = ep_chunk.verify_ep_chunk(mode, passcheck=args.passcheck, workdir=workdir,
                                              threads=torch.get_num_threads())
        except Exception as error:  # noqa: BLE001 - reported as a failure
            import traceback
            traceback.print_exc()
            failed.append(f"{mode}: verify_ep_chunk raised {type(error).__name__}: {error}")
            continue
        results[mode] = result
        print(summary(result))
        print(f"  wall {time.perf_counter() - start:.1f} s", flush=True)
        failed += check_mode(result)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1, default=str)
    if failed:
        print("\nFAILED properties:")
        for message in failed:
            print("  - " + message)
        return 1
    print(f"\nep_chunk_test: OK ({', '.join(modes)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
