"""torchtitan graph_trainer's FSDP passes on SimpleFSDP llama3, bit for bit, on 2 gloo ranks.

Runs passcheck_fx.titan.fsdp.verify_fsdp_passes(world_size=2) and asserts, on every rank:
the traced step equals eager SimpleFSDP (loss and every local gradient shard, torch.equal);
every pass of the default pipeline (dce, canonicalize, FSDP unshard dedup, memory policy,
remat, reassign_collective_pgs, joint transformer-block bucketing, dense-region scheduling)
runs and leaves loss and gradients bit for bit what the graph before it computed (and
what eager computed); each pass made the decisions it should on this model (one duplicate
tok_embeddings unshard chain removed; every all_gather, and only all_gathers, moved to one
extra group; 8 forward all_gather, 7 backward all_gather and 8 reduce_scatter buckets;
18 launch chains moved to dense regions), the same on every rank; the mutant (a bucketed
reduce_scatter replaced by this rank's chunk of its input) is told apart on every rank.
autobucketing with inductor's analytical estimates runs on the CPU, merges collectives and
is neutral. What cannot run on the CPU (autobucketing's default GPU benchmarking), the
strict dense scheduler on a reshard_after_forward="never" graph, and the passcheck export
attempt must fail for the known reason, so a change in any of them is noticed.

Usage: fsdp_test.py PASSCHECK_BINARY. Takes about a minute on 2 cores.
"""
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

import support  # noqa: E402,F401  (its scratch_root: temporary files removed at exit)
from passcheck_fx.titan import fsdp  # noqa: E402

WORLD_SIZE = 2
N_LAYERS = 6  # llama3 debugmodel
failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
        print("FAIL: " + message)
    return condition


def per_rank(report, name):
    return sorted(report["passes"].get(name, {}).items(), key=lambda kv: int(kv[0]))


def bucket_counts(entry):
    counts = {}
    for b in entry["decisions"]["bucket_list"]:
        key = (b["kind"], b["direction"])
        counts[key] = counts.get(key, 0) + 1
    return counts


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    passcheck = os.path.abspath(sys.argv[1])
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="fsdp_test_") as workdir:
        report = fsdp.verify_fsdp_passes(WORLD_SIZE, workdir=workdir, passcheck=passcheck, timeout_s=400)
        print(fsdp.summarize(report))
    elapsed = time.perf_counter() - start

    # Every rank finished, traced == eager, and a second run of the traced graph repeats
    # the first (so a difference below is the pass's, not gloo's).
    for r in range(WORLD_SIZE):
        res = report["ranks"].get(r) or report["ranks"].get(str(r)) or {}
        if not check(not res.get("error"), f"rank {r} failed: {res.get('error')}"):
            continue
        tv = res["traced_vs_eager"]
        check(tv["equal"], f"rank {r}: traced step differs from eager SimpleFSDP: {tv['first']}")
        check(tv["compared"] == 1 + res["params"], f"rank {r}: compared {tv['compared']} outputs, expected loss + "
              f"{res['params']} gradients")
        check(res["traced_rerun_equal"], f"rank {r}: two runs of the same traced graph differ (gloo not deterministic?)")
    if failures:
        return finish(elapsed)

    # The default pipeline: every pass runs and is bitwise neutral on every rank.
    for name in fsdp.PIPELINE:
        entries = per_rank(report, name)
        check(len(entries) == WORLD_SIZE, f"{name}: results from {len(entries)} ranks")
        for r, e in entries:
            if not check(e.get("ran"), f"{name} rank {r}: did not run: {e.get('why_not')} at {e.get('raised_at')}"):
                continue
            check("run_error" not in e, f"{name} rank {r}: the pass's graph failed to run: {e.get('run_error')}")
            check(e["vs_before"]["equal"], f"{name} rank {r}: loss/gradients differ from the graph before the pass: "
                  f"{e['vs_before'].get('first')}")
            check(e["vs_eager"]["equal"], f"{name} rank {r}: loss/gradients differ from eager: "
                  f"{e['vs_eager'].get('first')}")
        # SPMD: every rank made the same decisions.
        censuses = [(e["decisions"]["census_after"]["nodes"], e["decisions"]["census_after"]["all_gather"],
                     e["decisions"]["census_after"]["all_gather_out"], e["decisions"]["census_after"]["reduce_scatter"])
                    for _, e in entries if e.get("ran")]
        check(len(set(censuses)) <= 1, f"{name}: ranks disagree on the resulting graph (nodes, AG, AG_out, RS): "
              f"{censuses}")
    if failures:
        return finish(elapsed)

    # What each pass decided on this model.
    for r, e in per_rank(report, "deduplicate_fsdp_unshard_chains_pass"):
        d = e["decisions"]
        dup = d["duplicate_chains_before"]
        check(d["all_gathers_removed"] == 1 and len(dup) == 1
              and list(dup.values())[0]["used_by"] == ["tok_embeddings"],
              f"dedup rank {r}: expected one duplicate tok_embeddings unshard chain removed, got {dup}, "
              f"{d['all_gathers_removed']} all_gathers removed")
        check(not d["duplicate_chains_after"], f"dedup rank {r}: duplicates left: {d['duplicate_chains_after']}")
    for r, e in per_rank(report, "selective_activation_remat_pass"):
        check(e["decisions"]["backward_all_gathers"] > 0,
              f"remat rank {r}: no all_gather recomputed in the backward (reshard after forward)")
    for r, e in per_rank(report, "reassign_collective_pgs_pass"):
        d = e["decisions"]
        mapping = d["pg_mapping"]
        groups = d["census_after"]["groups"]
        check(len(mapping) == 1, f"reassign rank {r}: expected one source group mapped, got {mapping}")
        if mapping:
            (src, dst), = mapping.items()
            check(list(groups["all_gather"]) == [dst], f"reassign rank {r}: all_gathers on {groups['all_gather']}, "
                  f"expected all on {dst}")
            check(list(groups["reduce_scatter"]) == [src], f"reassign rank {r}: reduce_scatters on "
                  f"{groups['reduce_scatter']}, expected all left on {src}")
    for r, e in per_rank(report, "joint_transformer_block_bucketing_reordering_pass"):
        counts = bucket_counts(e)
        want = {("all_gather", "fwd"): N_LAYERS + 2, ("all_gather", "bwd"): N_LAYERS + 1,
                ("reduce_scatter", "bwd"): N_LAYERS + 2}
        check(counts == want, f"joint bucketing rank {r}: buckets {counts}, expected {want}")
        layer_buckets = [b for b in e["decisions"]["bucket_list"] if b["plan"][0].startswith("layers.")]
        check(all(b["tensors"] == 7 for b in layer_buckets),
              f"joint bucketing rank {r}: a transformer-block bucket does not carry the block's 7 parameters: "
              f"{[(b['plan'], b['kind'], b['tensors']) for b in layer_buckets if b['tensors'] != 7]}")
        c = e["decisions"]["census_after"]
        check(c["all_gather"] + c["all_gather_out"] == 2 * N_LAYERS + 3 and c["reduce_scatter"] == N_LAYERS + 2,
              f"joint bucketing rank {r}: {c['all_gather'] + c['all_gather_out']} all_gathers and "
              f"{c['reduce_scatter']} reduce_scatters left")
        prefetched = [b for b in e["decisions"]["bucket_list"] if b["compute_between_launch_and_wait"]]
        check(prefetched, f"joint bucketing rank {r}: no bucket launched ahead of its wait (no prefetch)")
    for r, e in per_rank(report, "schedule_fsdp_comms_to_dense_regions_pass"):
        moved = [line for line in e["decisions"]["log"] if "moved" in line and "comm chains" in line]
        check(moved and int(moved[-1].split("moved")[1].split()[0]) == 3 * N_LAYERS,
              f"dense scheduling rank {r}: expected {3 * N_LAYERS} comm chains moved, log {moved}")
        check(e["decisions"]["order"]["moved"] > 0, f"dense scheduling rank {r}: no node moved")

    # fsdp_reshard_after_forward="never": everything up to bucketing runs and is neutral;
    # the strict dense scheduler refuses the graph (no backward all_gathers to place);
    # without its strict check it runs and is neutral.
    for name in fsdp.NEVER_PIPELINE:
        strict_dense = name == fsdp.NEVER + "schedule_fsdp_comms_to_dense_regions_pass"
        for r, e in per_rank(report, name):
            if strict_dense:
                check(not e.get("ran") and "bwd_ag=0" in (e.get("why_not") or ""),
                      f"{name} rank {r}: expected the strict bucket-count check to refuse a graph without "
                      f"backward all_gathers; got ran={e.get('ran')} {e.get('why_not')}")
                continue
            if check(e.get("ran"), f"{name} rank {r}: did not run: {e.get('why_not')}"):
                check(e["vs_before"]["equal"] and e["vs_eager"]["equal"],
                      f"{name} rank {r}: differs: before {e['vs_before']} eager {e['vs_eager']}")

    # Alternatives (jit_backend's, meant for AOT forward/backward graphs): upstream's manual
    # bucketer finds no nn_module_stack in graph_trainer's trace and leaves it as it is;
    # autobucketing benchmarks compute nodes on a GPU by default.
    for r, e in per_rank(report, "transformer_block_bucketing_reordering_pass"):
        if check(e.get("ran"), f"upstream manual bucketing rank {r}: {e.get('why_not')}"):
            check(e["vs_before"]["equal"], f"upstream manual bucketing rank {r}: differs {e['vs_before']}")
    for r, e in per_rank(report, "autobucketing_reordering_pass"):
        if e.get("ran"):
            check(e["vs_before"]["equal"], f"autobucketing rank {r}: differs {e['vs_before']}")
        else:
            reason = (e.get("why_not") or "") + " ".join(e.get("raised_at") or [])
            check("NVIDIA" in reason or "cuda" in reason.lower(),
                  f"autobucketing rank {r}: failed for a reason other than needing a GPU: {reason}")

    # With analytical estimates (inductor's deterministic mode) autobucketing runs on the
    # CPU: it must merge collectives and stay bitwise neutral.
    for r, e in per_rank(report, "autobucketing_reordering_pass(deterministic)"):
        if check(e.get("ran"), f"autobucketing (analytical) rank {r}: did not run: {e.get('why_not')} "
                 f"at {e.get('raised_at')}"):
            c0, c1 = e["decisions"]["census_before"], e["decisions"]["census_after"]
            check(c1["all_gather"] + c1["all_gather_out"] < c0["all_gather"]
                  and c1["reduce_scatter"] < c0["reduce_scatter"],
                  f"autobucketing (analytical) rank {r}: no collective merged: {c0} -> {c1}")
            check(e["vs_before"]["equal"] and e["vs_eager"]["equal"],
                  f"autobucketing (analytical) rank {r}: differs: before {e['vs_before']} eager {e['vs_eager']}")

    # The mutant must be caught on every rank, in exactly the bucket it broke.
    for r in range(WORLD_SIZE):
        res = report["ranks"].get(r) or report["ranks"].get(str(r))
        m = res.get("mutant")
        if check(m is not None, f"rank {r}: no mutant result"):
            check(m["caught"], f"rank {r}: mutant ({m['kind']}, {m['replaced']}) NOT caught: {m['vs_pass_output']}")
            bucket = m.get("bucket") or []
            differing = [d["output"] for d in m["vs_pass_output"]["first"]]
            check(all(any(name.startswith(fqn + ".") for fqn in bucket) for name in differing),
                  f"rank {r}: mutant of bucket {bucket} changed gradients outside it: {differing}")

    # passcheck: the export parses; running needs a rank context `passcheck run` does not set
    # up (plain graph) and the inductor's bucketing ops (bucketed graph). If either starts
    # to run, its outputs must equal torch's.
    for r in range(WORLD_SIZE):
        res = report["ranks"].get(r) or report["ranks"].get(str(r))
        for tag, known in (("plain", "Could not resolve the process group"), ("bucketed", "unknown operator")):
            p = res.get("passcheck", {}).get(tag, {})
            if p.get("ran"):
                check(p["vs_torch"]["equal"], f"rank {r}: passcheck's run of the {tag} graph differs from torch: "
                      f"{p['vs_torch']}")
            else:
                check(known in (p.get("why_not") or ""),
                      f"rank {r}: passcheck could not run the {tag} graph for an unexpected reason: {p.get('why_not')}")
    return finish(elapsed)


def finish(elapsed):
    print(f"fsdp_test: {elapsed:.1f} s")
    if failures:
        print(f"FAILED: {len(failures)} check(s)")
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
