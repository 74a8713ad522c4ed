"""torchtitan graph_trainer's FSDP graph passes, verified bit for bit on SimpleFSDP graphs.

`verify_fsdp_passes(world_size)` starts `world_size` CPU processes joined by a gloo
process group. Each rank builds torchtitan's llama3 debug model (`models.build_model`:
float32, annotated with module FQNs before sharding, as graph_trainer's tests do), shards
it with SimpleFSDP (`data_parallel(mode="fully_shard")`, float32 param and reduce dtypes),
traces its training step on its own batch with graph_trainer's `minimal_fx_tracer`, and
runs the passes in the order `passes.compile_time_passes` composes them (PIPELINE: with
`enable_fsdp_ag_rs_overlap` and `enable_fsdp_dense_region_overlap` on, reshard after
forward). The memory-policy and remat passes are not FSDP passes; they are run because
they put the backward all_gathers (reshard after forward) into the graph. Then, from the
deduplicated graph: the same stages with fsdp_reshard_after_forward="never"
(NEVER_PIPELINE), and jit_backend's two passes (ALTERNATIVES: upstream's manual bucketer
`transformer_block_bucketing_reordering_pass`, and `autobucketing_reordering_pass`, as is
and with inductor's analytical estimates).

Every graph runs with the real gloo group (its collectives are `_c10d_functional` ops
resolved by group name in this process's c10d registry). Per rank and pass it records
whether the pass ran (or why not, and where it raised), what it decided (duplicate
unshard chains removed, process groups reassigned, buckets formed with their tensors and
overlap windows, collective launch order, nodes moved, the pass's own log lines), and
whether the loss and every local gradient shard equal, with torch.equal, those of the
graph before the pass and those of eager SimpleFSDP. A pass always works on a copy, so
one that raises half way leaves the pipeline's graph as it was.

A mutant (the final graph with its first bucketed reduce_scatter replaced by this rank's
chunk of its input: no sum over ranks) must be told apart from the graph it came from.

With `passcheck` (the binary's path), each rank's deduplicated graph (plain collectives)
and final graph (bucketed) are exported to passcheck's text and run in `passcheck run` on
the same inputs; the outputs against torch's, or the exact reason it cannot run, are
recorded.
"""

import contextlib
import datetime
import json
import logging
import os
import shutil
import subprocess
import tempfile
import time
import traceback

import torch

MODEL = "llama3"
MODEL_SEED = 0
DATA_SEED = 100          # rank r draws its batch from DATA_SEED + r (trace_step adds 1)
PG_TIMEOUT_S = 120       # a collective that never completes fails the rank instead of hanging

# The default pipeline's stages, in order (passes.compile_time_passes with
# enable_fsdp_ag_rs_overlap and enable_fsdp_dense_region_overlap on; fsdp_reshard_after_forward
# "default", i.e. True without pipeline parallelism; cpu offload off, so its pass is skipped).
# The memory-policy and remat stages are not FSDP passes, but they are what puts the
# backward all_gathers (reshard after forward) into the graph the FSDP passes then bucket.
PIPELINE = (
    "eliminate_dead_code_pass",
    "canonicalize_graph_pass",
    "deduplicate_fsdp_unshard_chains_pass",
    "tag_with_memory_policy_pass",
    "selective_activation_remat_pass",
    "reassign_collective_pgs_pass",
    "joint_transformer_block_bucketing_reordering_pass",
    "schedule_fsdp_comms_to_dense_regions_pass",
)
# fsdp_reshard_after_forward="never": the same stages from the deduplicated graph (the
# memory policy then saves every unshard, so the backward has no all_gathers), and the
# dense scheduler once more without its strict bucket-count check.
NEVER = "never:"
NEVER_PIPELINE = (
    NEVER + "tag_with_memory_policy_pass",
    NEVER + "selective_activation_remat_pass",
    NEVER + "joint_transformer_block_bucketing_reordering_pass",
    NEVER + "schedule_fsdp_comms_to_dense_regions_pass",
    NEVER + "schedule_fsdp_comms_to_dense_regions_pass(strict=False)",
)
# Alternatives the default pipeline does not run: each on a copy of the deduplicated graph.
# autobucketing benchmarks compute nodes on a GPU by default; inductor's `deterministic`
# config makes it use its analytical (roofline) estimates instead, which run on the CPU.
ALTERNATIVES = (
    "transformer_block_bucketing_reordering_pass",
    "autobucketing_reordering_pass",
    "autobucketing_reordering_pass(deterministic)",
)
ALL_PASSES = PIPELINE + NEVER_PIPELINE + ALTERNATIVES

_C10D = "_c10d_functional"


# ---- graph facts ---------------------------------------------------------------------

def _census(gm):
    """Collectives and bucketing ops of a graph, by kind and process group."""
    counts = {"nodes": 0, "all_gather": 0, "all_gather_out": 0, "reduce_scatter": 0, "all_reduce": 0,
              "wait": 0, "bucketing_ops": 0}
    groups = {}
    c10d = torch.ops._c10d_functional
    for node in gm.graph.nodes:
        counts["nodes"] += 1
        if node.op != "call_function":
            continue
        t = node.target
        kind = None
        if t is c10d.all_gather_into_tensor.default:
            kind, group = "all_gather", node.args[2]
        elif t is c10d.all_gather_into_tensor_out.default:
            kind, group = "all_gather_out", node.args[2]
        elif t is c10d.reduce_scatter_tensor.default:
            kind, group = "reduce_scatter", node.args[3]
        elif t is c10d.all_reduce.default:
            kind, group = "all_reduce", node.args[2]
        elif t is c10d.wait_tensor.default:
            counts["wait"] += 1
        elif getattr(t, "namespace", None) == "bucketing":
            counts["bucketing_ops"] += 1
        if kind:
            counts[kind] += 1
            groups.setdefault(kind, {}).setdefault(str(group), 0)
            groups[kind][str(group)] += 1
    counts["groups"] = groups
    return counts


def _lis_length(seq):
    import bisect
    tails = []
    for x in seq:
        i = bisect.bisect_left(tails, x)
        if i == len(tails):
            tails.append(x)
        else:
            tails[i] = x
    return len(tails)


def _order_diff(before_names, gm):
    """Nodes removed, added and moved (survivors not on a longest order-preserving run)."""
    index = {name: i for i, name in enumerate(before_names)}
    after = [n.name for n in gm.graph.nodes]
    survivors = [index[name] for name in after if name in index]
    return {"removed": len(before_names) - len(survivors), "added": len(after) - len(survivors),
            "moved": len(survivors) - _lis_length(survivors)}


def _module_fqn(node):
    return node.meta.get("custom", {}).get("module_fqn", "")


def _gather_or_scatter(node, names):
    """names[0] for an all_gather launch, names[1] for a reduce_scatter, else None."""
    c10d = torch.ops._c10d_functional
    if node.op != "call_function":
        return None
    if node.target in (c10d.all_gather_into_tensor.default, c10d.all_gather_into_tensor_out.default):
        return names[0]
    if node.target is c10d.reduce_scatter_tensor.default:
        return names[1]
    return None


def _collective_launch_order(gm):
    """(kind, fqn-or-bucket, direction) of every gather/scatter launch in graph order."""
    from torchtitan.experiments.graph_trainer.fsdp_passes import _FSDP_BUCKET_META
    order = []
    for node in gm.graph.nodes:
        kind = _gather_or_scatter(node, ("AG", "RS"))
        if kind is None:
            continue
        meta = node.meta.get(_FSDP_BUCKET_META)
        if isinstance(meta, dict):
            order.append(f"{kind}[{'+'.join(meta['plan_fqns'])}]{meta['direction']}")
        else:
            order.append(f"{kind}:{_module_fqn(node)}" + (":bwd" if node.meta.get("autograd_backward") else ""))
    return order


def _bucket_summary(gm):
    """Each bucketed collective: kind, plan, direction, how many tensors it carries, and
    how many compute nodes lie between its launch and its wait (the overlap window)."""
    from torchtitan.experiments.graph_trainer.fsdp_passes import _FSDP_BUCKET_META
    from torch._inductor.fx_passes.overlap_scheduling import is_compute_node
    c10d = torch.ops._c10d_functional
    nodes = list(gm.graph.nodes)
    pos = {n: i for i, n in enumerate(nodes)}
    compute_prefix = [0]
    for n in nodes:
        compute_prefix.append(compute_prefix[-1] + (1 if n.op == "call_function" and is_compute_node(n) else 0))
    buckets = []
    for node in nodes:
        kind = _gather_or_scatter(node, ("all_gather", "reduce_scatter"))
        if kind is None:
            continue
        meta = node.meta.get(_FSDP_BUCKET_META)
        # The tensors the bucket carries: the list argument of the bucketing op feeding it
        # (a bucket without graph_trainer's provenance, e.g. autobucketing's, is known by it).
        carried = None
        for inp in node.all_input_nodes:
            if getattr(inp.target, "namespace", None) == "bucketing":
                lists = [a for a in inp.args if isinstance(a, (list, tuple))]
                if lists:
                    carried = len(lists[0])
        if not isinstance(meta, dict) and carried is None and not _inlined_bucket(node):
            continue
        if not isinstance(meta, dict):
            meta = {"plan_fqns": (), "direction": "bwd" if node.meta.get("autograd_backward") else "unknown"}
        if carried is None and not _inlined_bucket(node):
            carried = 1
        waits = [u for u in node.users if u.target is c10d.wait_tensor.default]
        window = compute_prefix[pos[waits[0]]] - compute_prefix[pos[node] + 1] if waits else None
        buckets.append({"kind": kind, "plan": list(meta["plan_fqns"]), "direction": meta["direction"],
                        "tensors": carried, "compute_between_launch_and_wait": window,
                        "group": str(node.args[2] if kind == "all_gather" else node.args[3])})
    return buckets


def _inlined_bucket(node):
    """Whether a collective is a bucket whose packing was inlined (inductor's "default"
    bucket mode: an aten.cat of several tensors feeds it, or it gathers into an out
    buffer). How many tensors it carries is read from the census, not from here."""
    aten = torch.ops.aten
    if node.target is torch.ops._c10d_functional.all_gather_into_tensor_out.default:
        return True
    frontier = list(node.all_input_nodes)
    for _ in range(4):
        nxt = []
        for n in frontier:
            if n.op == "call_function" and n.target is aten.cat.default and len(n.args[0]) > 1:
                return True
            nxt.extend(n.all_input_nodes)
        frontier = nxt
    return False


def _duplicate_unshard_chains(gm):
    """Placeholders with more than one SimpleFSDP unshard chain (what the dedup pass merges)."""
    from torchtitan.experiments.graph_trainer.fsdp_patterns import find_fsdp_unshard_outputs
    found = {}
    for ph in gm.graph.find_nodes(op="placeholder"):
        try:
            outs = find_fsdp_unshard_outputs(ph)
        except ValueError as error:
            found[ph.name] = f"error: {error}"
            continue
        if len(outs) > 1:
            fqns = sorted({_module_fqn(u) for o in outs for u in o.users} - {""})
            found[ph.name] = {"chains": len(outs), "used_by": fqns,
                              "dead_chains": sum(1 for o in outs if not o.users)}
    return found


class _LogCapture(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.lines = []

    def emit(self, record):
        try:
            self.lines.append(record.getMessage())
        except Exception:  # a malformed record is not ours to fix
            self.lines.append(str(record.msg))


@contextlib.contextmanager
def _captured_logs():
    """The log lines a pass writes: torchtitan's (its logger is the root logger, lowered
    to INFO meanwhile) and inductor's fx passes' (at the level torch gives them)."""
    handler = _LogCapture()
    root = logging.getLogger()
    inductor = logging.getLogger("torch._inductor.fx_passes")
    level = root.level
    root.addHandler(handler)
    inductor.addHandler(handler)
    if level == logging.NOTSET or level > logging.INFO:
        root.setLevel(logging.INFO)
    try:
        yield handler.lines
    finally:
        root.removeHandler(handler)
        inductor.removeHandler(handler)
        root.setLevel(level)


@contextlib.contextmanager
def _quiet(name):
    """Inductor's runtime estimators warn once per node without an accelerator ("No
    accelerator available for TFLOPS estimation"): thousands of lines per pass."""
    lg = logging.getLogger(name)
    level = lg.level
    lg.setLevel(logging.ERROR)
    try:
        yield
    finally:
        lg.setLevel(level)


# ---- running -------------------------------------------------------------------------

def _flat_inputs(traced, model, args):
    from torchtitan.experiments.graph_trainer.make_fx_tracer import _unwrap_subclasses, extract_module_state
    state = extract_module_state(model)
    if list(state.keys()) != traced.state_fqns:
        raise ValueError("module state differs from the traced state")
    user = torch.utils._pytree.tree_leaves((args, {}))
    flat, _ = _unwrap_subclasses(list(state.values()) + list(user))
    return flat


def _local_outputs(values):
    """[loss, grad shards...] as plain tensors (DTensor gradients: their local shard)."""
    from torch.distributed.tensor import DTensor
    out = []
    for v in values:
        if isinstance(v, DTensor):
            v = v.to_local()
        out.append(v.detach().clone())
    return out


def _run_gm(gm, traced, flat_inputs):
    from torchtitan.experiments.graph_trainer.make_fx_tracer import _wrap_subclasses
    with torch.no_grad():
        flat = gm(*flat_inputs)
    wrapped = _wrap_subclasses(list(flat), traced.num_flat_outputs, traced.output_subclass_layouts)
    values = torch.utils._pytree.tree_unflatten(wrapped, traced.output_spec)
    return _local_outputs(values)


def _compare(a, b, names):
    """torch.equal per output; the first differing outputs with their max |diff|."""
    if len(a) != len(b):
        return {"equal": False, "compared": 0, "differ": None, "first": [f"{len(a)} outputs vs {len(b)}"]}
    differ = []
    for name, x, y in zip(names, a, b):
        same = x.dtype == y.dtype and x.shape == y.shape and torch.equal(x, y)
        if not same:
            diff = None
            if x.shape == y.shape and x.is_floating_point():
                diff = float((x.double() - y.double()).abs().max())
            differ.append({"output": name, "max_abs_diff": diff})
    return {"equal": not differ, "compared": len(a), "differ": len(differ), "first": differ[:4]}


def _clone_gm(gm):
    """A copy of a GraphModule whose nodes passes can rewrite without touching `gm`
    (node meta dicts are copied; the fake values inside are shared, never mutated)."""
    graph = torch.fx.Graph()
    out = graph.graph_copy(gm.graph, {}, return_output_node=True)
    graph.output(out[0] if isinstance(out, tuple) else out)
    new = torch.fx.GraphModule(gm, graph)
    for n_old, n_new in zip(gm.graph.nodes, new.graph.nodes):
        n_new.meta = dict(n_old.meta)
        if "custom" in n_old.meta:
            n_new.meta["custom"] = dict(n_old.meta["custom"])
    return new


# ---- the passes ----------------------------------------------------------------------

def _memory_config(reshard_after_forward):
    from types import SimpleNamespace
    return SimpleNamespace(
        compile=SimpleNamespace(memory_policy="default"),
        parallelism=SimpleNamespace(fsdp_reshard_after_forward=reshard_after_forward, pipeline_parallel_degree=1))


def _make_pass(label, traced, n_layers):
    """The pass a stage label names, bound to the arguments compile_time_passes gives it."""
    from torchtitan.experiments.graph_trainer import fsdp_passes as fp
    from torchtitan.experiments.graph_trainer.memory_policy import tag_with_memory_policy_pass
    from torchtitan.experiments.graph_trainer.selective_activation_remat import selective_activation_remat_pass
    reshard = "never" if label.startswith(NEVER) else "default"
    name = label[len(NEVER):] if label.startswith(NEVER) else label
    strict = not name.endswith("(strict=False)")
    name = name.split("(")[0]
    from torchtitan.experiments.graph_trainer import remove_noop_passes as rn
    from torchtitan.experiments.graph_trainer.common_utils import get_default_transformer_block_buckets
    plans = get_default_transformer_block_buckets(n_layers)
    if name == "eliminate_dead_code_pass":
        return rn.eliminate_dead_code_pass
    if name == "tag_with_memory_policy_pass":
        config = _memory_config(reshard)
        return lambda gm, ex: tag_with_memory_policy_pass(gm, ex, config=config)
    if name == "selective_activation_remat_pass":
        return selective_activation_remat_pass
    if name == "canonicalize_graph_pass":
        return rn.canonicalize_graph_pass
    if name == "deduplicate_fsdp_unshard_chains_pass":
        return fp.deduplicate_fsdp_unshard_chains_pass
    if name == "reassign_collective_pgs_pass":
        return fp.reassign_collective_pgs_pass
    if name == "joint_transformer_block_bucketing_reordering_pass":
        order = fp.get_fsdp_param_module_order(traced.state_fqns)
        return lambda gm, ex: fp.joint_transformer_block_bucketing_reordering_pass(
            gm, ex, module_bucket_plans=plans, fsdp_param_module_order=order)
    if name == "schedule_fsdp_comms_to_dense_regions_pass":
        counts = fp.get_transformer_block_bucket_counts(plans, n_layers=n_layers)
        return lambda gm, ex: fp.schedule_fsdp_comms_to_dense_regions_pass(
            gm, ex, moe_layer_ids=frozenset(), n_layers=n_layers,
            transformer_bucket_counts_by_layer=counts if strict else None, strict=strict)
    if name == "transformer_block_bucketing_reordering_pass":
        return lambda gm, ex: fp.transformer_block_bucketing_reordering_pass(gm, ex, fsdp_manual_buckets=plans)
    if name == "autobucketing_reordering_pass" and label.endswith("(deterministic)"):
        def autobucketing_analytical(gm, ex):
            import torch._inductor.config as inductor_config
            with inductor_config.patch(deterministic=True):
                return fp.autobucketing_reordering_pass(gm, ex)
        return autobucketing_analytical
    if name == "autobucketing_reordering_pass":
        return fp.autobucketing_reordering_pass
    raise ValueError(name)


def _base_name(label):
    return (label[len(NEVER):] if label.startswith(NEVER) else label).split("(")[0]


def _recompute_tags(gm):
    tags = {}
    for node in gm.graph.nodes:
        tag = node.meta.get("recompute")
        if tag is not None:
            key = getattr(tag, "name", str(tag))
            tags[key] = tags.get(key, 0) + 1
    return tags


def _decisions(label, before_gm_facts, gm, logs, extra):
    """What a pass decided, from the graph before (facts) and after, and its log lines."""
    name = _base_name(label)
    census = _census(gm)
    d = {"census_before": before_gm_facts["census"], "census_after": census,
         "order": _order_diff(before_gm_facts["names"], gm), "log": logs[-8:]}
    if name == "deduplicate_fsdp_unshard_chains_pass":
        d["duplicate_chains_before"] = before_gm_facts["duplicates"]
        d["duplicate_chains_after"] = _duplicate_unshard_chains(gm)
        d["all_gathers_removed"] = before_gm_facts["census"]["all_gather"] - census["all_gather"]
    if name == "reassign_collective_pgs_pass":
        d.update(extra)
    if name == "tag_with_memory_policy_pass":
        d["recompute_tags"] = _recompute_tags(gm)
        c10d = torch.ops._c10d_functional
        d["all_gather_tags"] = {}
        for node in gm.graph.nodes:
            if node.op == "call_function" and node.target is c10d.all_gather_into_tensor.default:
                tag = node.meta.get("recompute")
                key = getattr(tag, "name", str(tag))
                d["all_gather_tags"][key] = d["all_gather_tags"].get(key, 0) + 1
    if name == "selective_activation_remat_pass":
        d["recomputed_nodes"] = sum(1 for n in gm.graph.nodes if "_recomputed" in n.name)
        d["backward_all_gathers"] = sum(
            1 for n in gm.graph.nodes if n.op == "call_function"
            and n.target is torch.ops._c10d_functional.all_gather_into_tensor.default and "_recomputed" in n.name)
    if name in ("joint_transformer_block_bucketing_reordering_pass", "transformer_block_bucketing_reordering_pass",
                "autobucketing_reordering_pass", "schedule_fsdp_comms_to_dense_regions_pass"):
        buckets = _bucket_summary(gm)
        d["buckets"] = len(buckets)
        d["bucket_list"] = buckets
        d["launch_order"] = _collective_launch_order(gm)
    return d


def _facts(gm):
    return {"census": _census(gm), "names": [n.name for n in gm.graph.nodes],
            "duplicates": _duplicate_unshard_chains(gm)}


# ---- passcheck export ----------------------------------------------------------------

def _try_passcheck(gm, flat_inputs, rank, world_size, passcheck, workdir, tag, graph_label):
    """Export this rank's graph to passcheck's text and run it in `passcheck run` on the
    same inputs; record what happened (the outputs against torch's, or why it cannot run)."""
    from passcheck_fx import save_inputs, load_outputs
    from passcheck_fx.exporter import export_graph
    from torch.distributed.device_mesh import DeviceMesh
    t = time.perf_counter()
    result = {"attempted": True, "graph": graph_label}
    with torch.no_grad():
        reference = [o for o in gm(*flat_inputs) if isinstance(o, torch.Tensor)]
    gm = _clone_gm(gm)
    # DTensor flattening makes each parameter's DeviceMesh a graph input, and each DTensor
    # gradient's mesh a graph output (the same placeholder passed through). passcheck's
    # inputs and outputs are tensors: the mesh outputs and then the mesh inputs are dropped.
    placeholders = list(gm.graph.find_nodes(op="placeholder"))
    meshes = {node for node, value in zip(placeholders, flat_inputs) if isinstance(value, DeviceMesh)}
    output = next(n for n in gm.graph.nodes if n.op == "output")
    outs = output.args[0]
    kept_outs = [o for o in outs if o not in meshes]
    output.args = (kept_outs,)
    for node in meshes:
        if node.users:
            result.update(ran=False, why_not=f"mesh placeholder {node.name} is used by {list(node.users)}")
            return result
        gm.graph.erase_node(node)
    keep = [v for v in flat_inputs if not isinstance(v, DeviceMesh)]
    result["mesh_inputs_dropped"] = len(meshes)
    result["mesh_outputs_dropped"] = len(outs) - len(kept_outs)
    # passcheck names groups by mesh dim ("dp"); torch's graph names c10d's registered group.
    groups = set()
    for node in gm.graph.nodes:
        if node.op == "call_function" and getattr(node.target, "namespace", None) == _C10D:
            schema_args = node.target._schema.arguments
            args = list(node.args)
            for i, a in enumerate(args):
                if i < len(schema_args) and schema_args[i].name == "group_name":
                    groups.add(a)
                    args[i] = "dp"
            node.args = tuple(args)
    gm.recompile()
    result["groups_renamed_to_dp"] = sorted(groups)
    kinds = {node.name: "arg" for node in gm.graph.find_nodes(op="placeholder")}
    try:
        text = export_graph(gm, kinds=kinds, header=f"mesh dp={world_size} rank {rank}")
    except Exception as error:
        result.update(ran=False, why_not=f"export failed: {type(error).__name__}: {str(error)[:400]}")
        return result
    graph_file = os.path.join(workdir, f"rank{rank}_{tag}.graph")
    with open(graph_file, "w") as f:
        f.write(text)
    result["graph_file"] = graph_file
    result["graph_lines"] = text.count("\n")
    inputs_file = os.path.join(workdir, f"rank{rank}_in.pt")
    if not os.path.exists(inputs_file):
        save_inputs(inputs_file, keep)
    out_file = os.path.join(workdir, f"rank{rank}_{tag}_out.pt")
    cmd = [passcheck, "run", graph_file, "--inputs", inputs_file, "--save-outputs", out_file, "--threads", "1"]
    result["command"] = " ".join(cmd)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        result.update(ran=False, why_not="passcheck run timed out after 120 s")
        return result
    result["exit_code"] = proc.returncode
    result["time_s"] = round(time.perf_counter() - t, 2)
    tail = (proc.stdout + proc.stderr).strip().splitlines()
    result["message"] = [line[:400] for line in tail[-4:]]
    result["ran"] = proc.returncode == 0
    if proc.returncode == 0:
        outs = load_outputs(out_file)
        result["vs_torch"] = _compare(outs, reference, [str(i) for i in range(len(reference))])
    else:
        errors = [line for line in tail if "error:" in line] or tail or [f"exit {proc.returncode}"]
        result["why_not"] = "passcheck run failed: " + errors[0][:400]
    return result


# ---- the mutant ----------------------------------------------------------------------

def _mutate_reduce_scatter_to_local_copy(gm, rank, world_size):
    """Replace the first bucketed (else plain) reduce_scatter by this rank's chunk of its
    input: the gradient loses every other rank's contribution. Done identically on every
    rank, so the ranks still issue matching collectives."""
    from torchtitan.experiments.graph_trainer.fsdp_passes import _FSDP_BUCKET_META
    c10d = torch.ops._c10d_functional
    scatters = [n for n in gm.graph.nodes if n.op == "call_function" and n.target is c10d.reduce_scatter_tensor.default]
    bucketed = [n for n in scatters if _FSDP_BUCKET_META in n.meta]
    victim = (bucketed or scatters)[0]
    waits = [u for u in victim.users if u.target is c10d.wait_tensor.default]
    src = victim.args[0]
    rows = src.meta["val"].shape[0] // world_size
    with gm.graph.inserting_before(victim):
        chunk = gm.graph.call_function(torch.ops.aten.slice.Tensor, (src, 0, rank * rows, (rank + 1) * rows))
        copy_ = gm.graph.call_function(torch.ops.aten.clone.default, (chunk,))
    for w in waits:
        w.replace_all_uses_with(copy_)
        gm.graph.erase_node(w)
    gm.graph.erase_node(victim)
    gm.graph.lint()
    gm.recompile()
    meta = victim.meta.get(_FSDP_BUCKET_META)
    return {"replaced": victim.name, "bucket": list(meta["plan_fqns"]) if isinstance(meta, dict) else None}


# ---- one rank --------------------------------------------------------------------------

def _rank_main(rank, world_size, workdir, passcheck, with_mutant):
    result = {"rank": rank, "passes": {}, "error": None}
    t_start = time.perf_counter()
    try:
        _rank_body(rank, world_size, workdir, passcheck, with_mutant, result)
    except Exception:
        result["error"] = traceback.format_exc()[-4000:]
    result["time_s"] = round(time.perf_counter() - t_start, 2)
    with open(os.path.join(workdir, f"rank{rank}.json"), "w") as f:
        json.dump(result, f, indent=1, default=str)
    if result["error"] is not None:
        # A failed rank leaves its group to the process exit: destroying it could wait on
        # collectives its peers will never issue.
        os._exit(3)


def _rank_body(rank, world_size, workdir, passcheck, with_mutant, result):
    torch.set_num_threads(1)
    import torch.distributed as dist
    dist.init_process_group("gloo", init_method="file://" + os.path.join(workdir, "rendezvous"), rank=rank,
                            world_size=world_size, timeout=datetime.timedelta(seconds=PG_TIMEOUT_S))
    from torch.distributed.device_mesh import init_device_mesh
    from torchtitan.experiments.graph_trainer import fsdp_passes as fp
    from torchtitan.experiments.graph_trainer.simple_fsdp import MixedPrecisionPolicy, data_parallel
    from passcheck_fx.titan.models import build_model, trace_step

    t = time.perf_counter()
    mesh = init_device_mesh("cpu", (world_size,), mesh_dim_names=("fsdp",))
    model, config = build_model(MODEL, MODEL_SEED)  # annotated before sharding, as the tests do
    model = data_parallel(model, device_mesh=mesh, mode="fully_shard",
                          mp_policy=MixedPrecisionPolicy(param_dtype=torch.float32, reduce_dtype=torch.float32))
    result["fsdp_group"] = mesh.get_group().group_name
    result["build_s"] = round(time.perf_counter() - t, 2)

    t = time.perf_counter()
    step = trace_step(MODEL, seed=DATA_SEED + rank, model=model)
    traced = step.traced
    result["trace_s"] = round(time.perf_counter() - t, 2)
    n_layers = len(config.layers)
    gm = traced.gm
    flat = _flat_inputs(traced, model, step.args)
    names = ["loss"] + [n for n, p in model.named_parameters(remove_duplicate=False) if p.requires_grad]
    result["params"] = len(names) - 1
    result["local_tokens"] = list(step.args[0].shape)

    # Eager SimpleFSDP (autograd through DTensor redistributions) and the traced graph.
    t = time.perf_counter()
    eager = _local_outputs(step.step_fn(*step.args))
    traced_out = _run_gm(gm, traced, flat)
    traced_again = _run_gm(gm, traced, flat)
    result["traced_vs_eager"] = _compare(traced_out, eager, names)
    result["traced_rerun_equal"] = _compare(traced_again, traced_out, names)["equal"]
    result["eager_and_traced_s"] = round(time.perf_counter() - t, 2)
    result["loss"] = float(traced_out[0])

    # The default pipeline, in order: each pass against the graph before it and eager.
    fp._EXTRA_FSDP_PG_REGISTRY.clear()
    previous = traced_out
    after_dedup = after_dedup_out = None
    for label in PIPELINE:
        entry = _apply_and_check(label, gm, traced, flat, previous, eager, names, n_layers)
        result["passes"][label] = entry
        if entry.get("ran") and "_gm" in entry:
            gm = entry.pop("_gm")
            previous = entry.pop("_out")
        if label == "deduplicate_fsdp_unshard_chains_pass":
            after_dedup, after_dedup_out = gm, previous
    # reshard_after_forward="never": the same stages on a copy of the deduplicated graph.
    never_gm, never_prev = after_dedup, after_dedup_out
    for label in NEVER_PIPELINE:
        # The scheduler's two runs (strict, then not) both start from the bucketed graph.
        entry = _apply_and_check(label, never_gm, traced, flat, never_prev, eager, names, n_layers)
        result["passes"][label] = entry
        if entry.get("ran") and "_gm" in entry:
            new_gm, new_out = entry.pop("_gm"), entry.pop("_out")
            if not label.startswith(NEVER + "schedule_"):
                never_gm, never_prev = new_gm, new_out
    # Alternatives, each on its own copy of the deduplicated graph.
    for label in ALTERNATIVES:
        entry = _apply_and_check(label, after_dedup, traced, flat, after_dedup_out, eager, names, n_layers)
        entry.pop("_gm", None)
        entry.pop("_out", None)
        result["passes"][label] = entry
    result["nodes_with_nn_module_stack"] = sum(1 for n in after_dedup.graph.nodes if n.meta.get("nn_module_stack"))

    # The mutant: the final pipeline graph with a reduce_scatter replaced by a local copy.
    if with_mutant:
        t = time.perf_counter()
        mutant = _clone_gm(gm)
        how = _mutate_reduce_scatter_to_local_copy(mutant, rank, world_size)
        out = _run_gm(mutant, traced, flat)
        cmp = _compare(out, previous, names)
        result["mutant"] = {"kind": "bucketed reduce_scatter replaced by this rank's chunk of its input", **how,
                            "vs_pass_output": cmp, "caught": not cmp["equal"],
                            "time_s": round(time.perf_counter() - t, 2)}

    # passcheck: export this rank's deduplicated graph (plain collectives) and its final
    # pipeline graph (bucketed collectives), and run each in `passcheck run`.
    if passcheck:
        result["passcheck"] = {}
        for tag, graph, label in (("plain", after_dedup, "after deduplicate_fsdp_unshard_chains_pass"),
                                  ("bucketed", gm, "after the whole pipeline (bucketed, dense-scheduled)")):
            try:
                result["passcheck"][tag] = _try_passcheck(graph, flat, rank, world_size, passcheck, workdir, tag,
                                                          label)
            except Exception as error:
                result["passcheck"][tag] = {"attempted": True, "ran": False, "graph": label,
                                            "why_not": f"{type(error).__name__}: {error}"}

    dist.barrier()
    dist.destroy_process_group()


def _raise_site(error):
    """The frames an exception passed through, innermost last, outside this file."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if not f.filename.endswith("titan/fsdp.py")]
    return [f"{f.filename.split('site-packages/')[-1]}:{f.lineno} in {f.name}" for f in frames[-4:]]


def _apply_and_check(name, gm, traced, flat, previous, eager, names, n_layers):
    entry = {"ran": False}
    gm = _clone_gm(gm)  # a pass that raises half way must not leave the pipeline's graph half rewritten
    before = _facts(gm)
    extra = {}
    t = time.perf_counter()
    try:
        pass_fn = _make_pass(name, traced, n_layers)
        with _captured_logs() as logs, _quiet("torch._inductor.utils"):
            if _base_name(name) == "reassign_collective_pgs_pass":
                from torchtitan.experiments.graph_trainer.fsdp_passes import _EXTRA_FSDP_PG_REGISTRY
                before_registry = dict(_EXTRA_FSDP_PG_REGISTRY)
            new_gm = pass_fn(gm, traced.example_inputs)
            if _base_name(name) == "reassign_collective_pgs_pass":
                extra["pg_mapping"] = {k: v for k, v in _EXTRA_FSDP_PG_REGISTRY.items() if k not in before_registry}
        entry["pass_s"] = round(time.perf_counter() - t, 3)
    except Exception as error:
        entry["why_not"] = f"{type(error).__name__}: {str(error)[:600]}"
        entry["raised_at"] = _raise_site(error)
        entry["pass_s"] = round(time.perf_counter() - t, 3)
        return entry
    entry["ran"] = True
    entry["decisions"] = _decisions(name, before, new_gm, list(logs), extra)
    t = time.perf_counter()
    try:
        out = _run_gm(new_gm, traced, flat)
    except Exception as error:
        entry["run_error"] = f"{type(error).__name__}: {str(error)[:600]}"
        entry["vs_before"] = {"equal": False}
        entry["vs_eager"] = {"equal": False}
        return entry
    entry["run_s"] = round(time.perf_counter() - t, 3)
    entry["vs_before"] = _compare(out, previous, names)
    entry["vs_eager"] = _compare(out, eager, names)
    entry["_gm"] = new_gm
    entry["_out"] = out
    return entry


# ---- the entry point -------------------------------------------------------------------

def verify_fsdp_passes(world_size=2, workdir=None, passcheck=None, with_mutant=True, timeout_s=600):
    """Run the passes on every rank of a `world_size` gloo group (one spawned process per
    rank, `timeout_s` for all of them); returns

        {"world_size", "model", "time_s", "workdir",
         "ranks": {r: {"error", "time_s", "build_s", "trace_s", "params", "loss",
                       "traced_vs_eager", "traced_rerun_equal", "mutant", "passcheck", ...}},
         "passes": {stage label: {r: {"ran", "why_not", "raised_at", "decisions",
                                      "vs_before", "vs_eager", "pass_s", "run_s"}}}}

    where a comparison is {"equal", "compared", "differ", "first": [{"output", "max_abs_diff"}]}.
    `passcheck`: the binary's path, to export and run each rank's graphs in it. The work
    directory (a temporary one by default) holds the rendezvous file, each rank's JSON and,
    with `passcheck`, the exported graphs; a temporary one is removed unless `passcheck`."""
    import torch.multiprocessing as mp
    own_dir = workdir is None
    workdir = tempfile.mkdtemp(prefix="passcheck_fsdp_") if own_dir else workdir
    os.makedirs(workdir, exist_ok=True)
    for f in os.listdir(workdir):
        if f.startswith("rank") or f == "rendezvous":
            os.unlink(os.path.join(workdir, f))
    t = time.perf_counter()
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_rank_main, args=(r, world_size, workdir, passcheck, with_mutant), daemon=False)
             for r in range(world_size)]
    for p in procs:
        p.start()
    deadline = time.monotonic() + timeout_s
    for p in procs:
        p.join(max(1.0, deadline - time.monotonic()))
    killed = []
    for r, p in enumerate(procs):
        if p.is_alive():
            p.kill()
            p.join()
            killed.append(r)
    report = {"world_size": world_size, "model": MODEL, "time_s": round(time.perf_counter() - t, 2),
              "workdir": workdir, "ranks": {}, "passes": {name: {} for name in ALL_PASSES}}
    for r in range(world_size):
        path = os.path.join(workdir, f"rank{r}.json")
        if not os.path.exists(path):
            report["ranks"][r] = {"error": "killed after the timeout" if r in killed else
                                  f"no result (exit code {procs[r].exitcode})"}
            continue
        with open(path) as f:
            res = json.load(f)
        for name, entry in res.pop("passes").items():
            report["passes"].setdefault(name, {})[r] = entry
        report["ranks"][r] = res
    if own_dir and not passcheck:
        shutil.rmtree(workdir, ignore_errors=True)
    return report


def summarize(report):
    """One line per pass and rank."""
    lines = [f"world_size {report['world_size']}  {report['time_s']} s"]
    for r, res in report["ranks"].items():
        if res.get("error"):
            lines.append(f"rank {r}: ERROR {res['error'].splitlines()[-1] if res['error'] else ''}")
            continue
        tv = res["traced_vs_eager"]
        lines.append(f"rank {r}: trace {res['trace_s']} s, loss {res['loss']:.6f}, traced vs eager "
                     f"{'EQUAL' if tv['equal'] else 'DIFFER'} ({tv['compared']} outputs), rerun equal "
                     f"{res['traced_rerun_equal']}")
    for name, per_rank in report["passes"].items():
        for r, e in sorted(per_rank.items(), key=lambda kv: int(kv[0])):
            if not e.get("ran"):
                lines.append(f"{name:52s} r{r}: NOT RUN: {(e.get('why_not') or '').splitlines()[0]}")
                continue
            d = e["decisions"]
            c0, c1 = d["census_before"], d["census_after"]
            lines.append(
                f"{name:52s} r{r}: nodes {c0['nodes']}->{c1['nodes']} AG {c0['all_gather'] + c0['all_gather_out']}->"
                f"{c1['all_gather'] + c1['all_gather_out']} RS {c0['reduce_scatter']}->{c1['reduce_scatter']} "
                f"moved {d['order']['moved']} buckets {d.get('buckets', '-')} | vs before "
                f"{'EQUAL' if e['vs_before']['equal'] else 'DIFFER'} vs eager "
                f"{'EQUAL' if e['vs_eager']['equal'] else 'DIFFER'} | {e['pass_s']} s")
    return "\n".join(lines)


if __name__ == "__main__":
    import sys
    rep = verify_fsdp_passes(int(sys.argv[1]) if len(sys.argv) > 1 else 2,
                             passcheck=sys.argv[2] if len(sys.argv) > 2 else None)
    print(summarize(rep))
    print(json.dumps(rep, indent=1, default=str)[:20000])
