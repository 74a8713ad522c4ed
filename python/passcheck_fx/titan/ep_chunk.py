"""torchtitan graph_trainer's EP chunk pass (`ep_chunk_pass`) verified on deepseek_v3.

`verify_ep_chunk(mode)` does on torchtitan's deepseek_v3 debug model (CPU, float32) what
graph_trainer does when `--compile.ep_overlap.enabled --compile.ep_overlap.strategy graph`
is set, and checks it:

1. trace: the training step is traced by graph_trainer's tracer with the EP-overlap trace
   preparers (`prepare_ep_overlap_trace_inputs` marks the token grid's batch (dim 0) or
   sequence (dim 1) unbacked with its size as hint, `prepare_ep_overlap_trace_call_inputs`),
   so the graph carries one symbol (u0) in that dimension;
2. chunk: `populate_chunk_dim_metadata_pass`, then the roots `ep_overlap_chunk_pass` picks
   (on one rank `expert_parallel_degree == 1`, so `require_all_to_all=False`: roots from the
   EP annotations, the MoE layers) go to `apply_chunk_pass`, with graph_trainer's default
   early gradient accumulation (`optimize_grad_live_out=True`) and without it
   (`disable_early_grad_accumulation`), and with early accumulation once more with its
   insertion-point bug fixed here (`_fixed_materialize_suffix_from_full_boundary`, patched in
   for that call only) so its numerics can be checked; the decisions (regions,
   split/cat/add, body nodes) are counted;
3. numerics, bit for bit: the chunked graph against graph_trainer's eager chunking
   (`ep_eager_chunk.maybe_apply_ep_overlap_eager_chunking`, strategy "eager", run eagerly
   with autograd) on the same model and batch: the loss and every gradient torch.equal;
   and against the unchunked traced graph (chunking changes reduction orders, so those may
   differ: which do is recorded); `concretize_ep_chunk_symbolic_shapes_pass` must not
   change a bit;
4. passcheck's executor: the chunked (concretized) graph is exported and `passcheck run`
   must give torch's bits;
5. differential: passcheck's own `chunk{mode=...}` pass runs on the exported unchunked
   graph. The FX exporter writes no symbolic sizes, so this module exports the symbolic
   trace itself (symbol line, `sym(...)` sizes and arguments, scalar plumbing inlined into
   the expressions); passcheck's claims are proved with `passcheck prove`; its decisions
   and numerics are compared with graph_trainer's. graph_trainer's own symbolic chunked
   graph is exported too and its split assumption is stated as a claim over its range.
6. mutants: the chunked graph with one chunk's gradient partial dropped, and with the two
   halves of a forward cat swapped, must be caught: the first by torch's bitwise comparison
   with eager chunking and by `passcheck equiv` (exit 1), the second by `passcheck run` and a
   bitwise comparison (in torch when passcheck cannot run).

Every fact lands in the returned dict; `differences` lists each disagreement found with a
classification: "bug in theirs", "bug in ours" or "difference in semantics".
"""

import contextlib
import operator
import os
import re
import subprocess
import tempfile
import time

import torch
import torch.fx as fx

from .. import exporter, load_outputs, save_inputs
from . import tools

MODES = ("batch", "seq")
# graph_trainer's EpOverlapConfig: layers.* is the default module_fqn; seq chunking is only
# accepted for layers.*.moe (attention needs the full sequence).
MODULE_FQN = {"batch": "layers.*", "seq": "layers.*.moe"}
MODEL = "deepseek_v3"
SCATTER_OP = "torchtitan::deterministic_scatter_add"


# ---- small helpers -----------------------------------------------------------------------

class _Timer:
    def __init__(self):
        self.times = {}

    @contextlib.contextmanager
    def __call__(self, name):
        start = time.perf_counter()
        try:
            yield
        finally:
            self.times[name] = round(self.times.get(name, 0.0) + time.perf_counter() - start, 3)


def find_passcheck(passcheck=None):
    try:
        return tools.find_passcheck(passcheck)
    except FileNotFoundError:
        return None


def _call(passcheck, args, timeout=300):
    """(exit code, stdout+stderr)."""
    return tools.run(passcheck, args, timeout)


_bitwise_equal = tools.bitwise_equal


def _compare(a, b, names):
    """Per-output bitwise comparison: counts, the names that differ, the largest |diff|."""
    if len(a) != len(b):
        return {"equal": False, "compared": min(len(a), len(b)), "error": f"{len(a)} vs {len(b)} outputs"}
    differ, max_abs = [], 0.0
    for name, x, y in zip(names, a, b):
        if not _bitwise_equal(x, y):
            differ.append(name)
            if x.shape == y.shape and x.is_floating_point():
                max_abs = max(max_abs, float((x.double() - y.double()).abs().max()))
    return {"equal": not differ, "compared": len(a), "differ_count": len(differ),
            "differ": differ, "max_abs_diff": max_abs}


def _copy_gm(gm):
    """An independent copy of the graph (node metadata dicts copied, fake values shared)."""
    graph = fx.Graph()
    value_map = {}
    out = graph.graph_copy(gm.graph, value_map)
    graph.output(out)
    copy = fx.GraphModule(gm, graph)
    return copy


def _run(gm, inputs):
    with torch.no_grad():
        return [o.detach().clone() for o in gm(*[t.clone() for t in inputs])]


def _is_scalar_node(node):
    return node.op == "call_function" and isinstance(node.meta.get("val"), (torch.SymInt, torch.SymBool, torch.SymFloat, int)) \
        and not isinstance(node.meta.get("val"), bool) and node.target is not operator.getitem


def _is_tensor_op(node):
    return (node.op == "call_function" and node.target is not operator.getitem
            and hasattr(node.target, "_schema")
            and node.target not in (torch.ops.aten.sym_size.int, torch.ops.aten.sym_stride.int,
                                    torch.ops.aten.sym_numel.default, torch.ops.aten.sym_storage_offset.default))


# ---- graph_trainer pieces ----------------------------------------------------------------

def _compile_config(mode, strategy, early_accumulation=True):
    from torchtitan.experiments.graph_trainer.configs import EpOverlapConfig, GraphTrainerCompileConfig
    return GraphTrainerCompileConfig(enable=True, ep_overlap=EpOverlapConfig(
        enabled=True, chunk_dim=mode, strategy=strategy, module_fqn=MODULE_FQN[mode],
        disable_early_grad_accumulation=not early_accumulation))


def trace(mode, seed=0, batch=2, seq=32, n_layers=None):
    """The step traced as graph_trainer's trainer traces it with graph EP chunking on: its
    `_prepare_trace_inputs` / `_prepare_trace_call_inputs`, i.e. the registered preparers of
    `trace_input_preparer_keys(compile)` (here "ep_overlap": ep_chunk_pass's two).
    n_layers: the debug model's first n_layers blocks only (models.build_model)."""
    from torchtitan.experiments.graph_trainer import ep_chunk_pass  # noqa: F401 - registers the preparers
    from torchtitan.experiments.graph_trainer.configs import trace_input_preparer_keys
    from torchtitan.experiments.graph_trainer.registry import TRACE_CALL_INPUT_PREPARERS, TRACE_INPUT_PREPARERS
    from . import models
    config = _compile_config(mode, "graph")
    keys = trace_input_preparer_keys(config)

    def prepare_inputs(args, kwargs):
        for key in keys:
            if TRACE_INPUT_PREPARERS.get(key) is not None:
                TRACE_INPUT_PREPARERS[key](config, args, kwargs)

    def prepare_call_inputs(args, kwargs):
        for key in keys:
            if TRACE_CALL_INPUT_PREPARERS.get(key) is not None:
                prepared = TRACE_CALL_INPUT_PREPARERS[key](config, args, kwargs)
                if prepared is not None:
                    args, kwargs = prepared
        return args, kwargs

    return models.trace_step(MODEL, seed=seed, batch=batch, seq=seq, prepare_inputs=prepare_inputs,
                             prepare_call_inputs=prepare_call_inputs, n_layers=n_layers)


def _fixed_materialize_suffix_from_full_boundary(gm, plan, boundary, materialized, suffix, *, originals):
    """graph_trainer's `_materialize_suffix_from_full_boundary` with its insertion point
    fixed: the full shape's SymInt nodes and the suffix node are created together right
    after the materialized value, so the shape nodes precede the view reading them (the
    original creates the shape nodes at the outer insertion point, before the first full
    user, and the view right after the cat/add: the view reads nodes defined after it)."""
    from torchtitan.experiments.graph_trainer import ep_chunk_pass as ecp
    from torch.utils._pytree import tree_map
    remapped = {boundary: materialized}
    current = materialized
    for node in suffix:
        args, kwargs, meta, name = originals[node]
        new_args = tree_map(lambda arg: remapped.get(arg, arg), args)
        new_kwargs = tree_map(lambda arg: remapped.get(arg, arg), kwargs)
        original_val = meta.get("val")
        shape_arg_idx = ecp.view_shape_arg_index(node.target)
        anchor = current.next
        with gm.graph.inserting_before(anchor):
            if (shape_arg_idx is not None and isinstance(new_args, tuple) and len(new_args) > shape_arg_idx
                    and isinstance(new_args[shape_arg_idx], (list, tuple))
                    and isinstance(original_val, torch.Tensor)):
                materialized_shape = ecp._materialize_symint_args(gm, list(original_val.shape), region=plan.region,
                                                                  role="materialization")
                new_args = (*new_args[:shape_arg_idx], materialized_shape, *new_args[shape_arg_idx + 1:])
            current = gm.graph.create_node(node.op, node.target, new_args, new_kwargs, type_expr=node.type)
        current._rename(f"{name}_chunk_materialized")
        current.meta = ecp._copy_meta(meta)
        ecp._set_synthetic_meta(current, region=plan.region, role="materialization")
        remapped[node] = current
    return current


@contextlib.contextmanager
def _patched_suffix_materialization():
    from torchtitan.experiments.graph_trainer import ep_chunk_pass as ecp
    original = ecp._materialize_suffix_from_full_boundary
    ecp._materialize_suffix_from_full_boundary = _fixed_materialize_suffix_from_full_boundary
    try:
        yield
    finally:
        ecp._materialize_suffix_from_full_boundary = original


def chunk(step, gm, mode, early_accumulation, fixed=False):
    """graph_trainer's chunk passes as its pipeline runs them (populate, then
    ep_overlap_chunk_pass's root choice and apply_chunk_pass) on `gm`, in place.
    Returns the EP roots."""
    from torchtitan.experiments.graph_trainer import ep_chunk_pass as ecp
    ecp.populate_chunk_dim_metadata_pass(gm, mode=mode)
    roots = ecp._ep_roots(gm, MODULE_FQN[mode]) or ecp._ep_annotated_roots(gm, MODULE_FQN[mode])
    if not roots:
        raise ValueError(f"No EP regions matched {MODULE_FQN[mode]!r}.")
    with _patched_suffix_materialization() if fixed else contextlib.nullcontext():
        ecp.apply_chunk_pass(gm, mode=mode, module_patterns=roots, num_static_inputs=step.traced.num_static_inputs,
                             optimize_grad_live_out=early_accumulation)
    return roots


def eager_chunked_outputs(step, mode):
    """graph_trainer's eager chunking of a fresh copy of the model (same seed), run eagerly
    with autograd on the step's batch: [loss, *grads]."""
    from torchtitan.experiments.graph_trainer.ep_eager_chunk import maybe_apply_ep_overlap_eager_chunking
    from torchtitan.experiments.graph_trainer.trainer import make_fwd_bwd_step
    from . import models
    model, _ = models.build_model(step.name, step.seed, n_layers=step.n_layers)
    state = [t.detach().clone() for t in step.flat_inputs(model)]
    maybe_apply_ep_overlap_eager_chunking(model, _compile_config(mode, "eager"))
    wrapped = sorted(fqn for fqn, m in model.named_modules()
                     if type(m.forward).__name__ == "_EagerChunkedForward")
    outputs = make_fwd_bwd_step(model, step.loss_fn)(*step.args)
    return [o.detach().clone() for o in outputs], wrapped, state


def layout_breaking_suffixes(gm):
    """Materialized view suffixes over a materialized cat where the cat's chunked extent and
    the view's do not start at the same linear offset (elements before them differ): the view
    then does not equal the cat of per-chunk views."""
    out = []
    for node in gm.graph.nodes:
        if node.meta.get("chunked_region_role") != "materialization" or not _is_tensor_op(node) \
                or not node.all_input_nodes:
            continue
        source = node.args[0]
        if not isinstance(source, fx.Node) or source.target is not torch.ops.aten.cat.default \
                or source.meta.get("chunked_region_role") != "materialization":
            continue
        src, val = source.meta.get("val"), node.meta.get("val")
        if not isinstance(src, torch.Tensor) or not isinstance(val, torch.Tensor):
            continue
        cat_dim = source.args[1] if len(source.args) > 1 else 0
        view_dim = next((i for i, size in enumerate(val.shape) if _symbolic(size)), None)
        if view_dim is None:
            continue
        before_src = _hint_product(src.shape[:cat_dim])
        before_view = _hint_product(val.shape[:view_dim])
        if before_src != before_view:
            out.append(f"{node.name} = {_op_name(node)}(cat(dim {cat_dim}) {list(map(str, src.shape))}) -> "
                       f"{list(map(str, val.shape))}")
    return out


def _hint_product(sizes):
    total = 1
    for size in sizes:
        if _symbolic(size):
            return None
        total *= int(size)
    return total


def _max_rel_diff(a, b):
    worst = 0.0
    for x, y in zip(a, b):
        if x.is_floating_point() and x.shape == y.shape:
            scale = float(y.abs().max()) or 1.0
            worst = max(worst, float((x.double() - y.double()).abs().max()) / scale)
    return worst


def decisions(gm):
    """The chunk decisions graph_trainer's metadata records."""
    regions, roles, body = {}, {}, {}
    splits = cats = adds = 0
    add_proofs, resplits = {}, []
    for node in gm.graph.nodes:
        role = node.meta.get("chunked_region_role")
        if role is None:
            continue
        key = (node.meta.get("chunked_region_fqn"), "backward" if node.meta.get("chunked_region_is_backward") else "forward")
        tensor_op = _is_tensor_op(node)
        if tensor_op:
            roles[role] = roles.get(role, 0) + 1
        if role == "body" and tensor_op:
            regions[key] = regions.get(key, 0) + 1
            body.setdefault(key, {0: set(), 1: set()})[node.meta.get("chunk_id")].add(node.meta.get("chunked_original_name"))
        if node.target is torch.ops.aten.split_with_sizes.default and role == "split_boundary":
            splits += 1
            if key[1] == "backward":
                source = node.args[0]
                resplits.append({"region": key[0], "live_in": source.name,
                                 "forward_materialization": source.meta.get("chunked_region_role") == "materialization"
                                 and not source.meta.get("chunked_region_is_backward"),
                                 "forward_split_live_in": any(
                                     u.target is torch.ops.aten.split_with_sizes.default
                                     and u.meta.get("chunked_region_role") == "split_boundary"
                                     and not u.meta.get("chunked_region_is_backward") for u in source.users)})
        elif role == "materialization" and node.target is torch.ops.aten.cat.default:
            cats += 1
        elif role == "materialization" and node.target is torch.ops.aten.add.Tensor:
            adds += 1
            proof = node.meta.get("chunked_materialization_proof")
            add_proofs[proof] = add_proofs.get(proof, 0) + 1
    return {"regions": len(regions), "region_body_nodes": {f"{k[0]} {k[1]}": v for k, v in sorted(regions.items())},
            "split_live_ins": splits, "materialized_cat": cats, "materialized_add": adds, "add_proofs": add_proofs,
            "tensor_nodes_by_role": roles, "_body": body,
            "_backward_splits": resplits}


def _node_counts(gm):
    nodes = list(gm.graph.nodes)
    return {"fx_nodes": len(nodes), "tensor_ops": sum(1 for n in nodes if _is_tensor_op(n)),
            "scalar_nodes": sum(1 for n in nodes if _is_scalar_node(n))}


def _output_names(step):
    return ["loss"] + [fqn for fqn, p in step.model.named_parameters(remove_duplicate=False) if p.requires_grad]


# ---- export, symbolic included -----------------------------------------------------------

class _SymArg:
    """A symbolic scalar written inline as sym(...) in place of a scalar node."""

    def __init__(self, value):
        self.value = value


def sym_text(expr):
    """A sympy expression (or SymInt) in passcheck's sym(...) syntax."""
    import sympy
    from torch.utils._sympy import functions as F
    if isinstance(expr, torch.SymInt):
        expr = expr.node.expr
    if isinstance(expr, int) or (isinstance(expr, sympy.Basic) and expr.is_Integer):
        return str(int(expr))
    if isinstance(expr, sympy.Symbol):
        return expr.name
    if isinstance(expr, sympy.Add):
        return "(" + " + ".join(sym_text(a) for a in expr.args) + ")"
    if isinstance(expr, sympy.Mul):
        return "(" + "*".join(sym_text(a) for a in expr.args) + ")"
    if isinstance(expr, sympy.Pow) and expr.exp.is_Integer and int(expr.exp) > 0:
        return "(" + "*".join([sym_text(expr.base)] * int(expr.exp)) + ")"
    if isinstance(expr, (F.Max, F.Min)) or type(expr).__name__ in ("Max", "Min"):
        name = type(expr).__name__.lower()
        text = sym_text(expr.args[0])
        for arg in expr.args[1:]:
            text = f"{name}({text}, {sym_text(arg)})"
        return text
    if isinstance(expr, (F.FloorDiv, F.CleanDiv)):
        return f"floordiv({sym_text(expr.args[0])}, {sym_text(expr.args[1])})"
    if isinstance(expr, (F.Mod, F.PythonMod)):
        return f"mod({sym_text(expr.args[0])}, {sym_text(expr.args[1])})"
    raise exporter.ExportError(f"no passcheck form for the symbolic expression {expr!r} ({type(expr).__name__})")


def _symbolic(value):
    return isinstance(value, torch.SymInt) and bool(value.node.expr.free_symbols)


def _dim_text(value):
    if isinstance(value, torch.SymInt):
        if not value.node.expr.free_symbols:
            return str(int(value.node.expr))
        return f"sym({sym_text(value)})"
    return str(int(value))


def chunk_symbol(gm):
    """(sympy symbol, hint, lower, upper) of the placeholder dimension the preparer marked."""
    for node in gm.graph.nodes:
        val = node.meta.get("val")
        if node.op == "placeholder" and isinstance(val, torch.Tensor):
            for size in val.shape:
                if _symbolic(size):
                    expr = size.node.expr
                    env = size.node.shape_env
                    hint = getattr(env, "var_to_hint_override", {}).get(expr)
                    if hint is None:
                        hint = size.node.hint
                    bounds = env.var_to_range.get(expr)
                    return expr, hint, int(bounds.lower), int(bounds.upper)
    return None


@contextlib.contextmanager
def _symbolic_exporter(hints):
    """exporter's constant and type writers taught sym(...) for the duration."""
    original_constant, original_type = exporter.format_constant, exporter._tensor_type

    def hint_of(value):
        if isinstance(value, torch.SymInt):
            return int(value.node.expr.xreplace(hints))
        return int(value)

    def format_constant(value, where="a constant"):
        if isinstance(value, _SymArg):
            return _dim_text(value.value)
        if isinstance(value, torch.SymInt):
            return _dim_text(value)
        return original_constant(value, where)

    def tensor_type(dtype, sizes, strides, device, where):
        if not any(_symbolic(s) for s in list(sizes) + list(strides)):
            return original_type(dtype, [hint_of(s) for s in sizes], [hint_of(s) for s in strides], device, where)
        if dtype not in exporter.DTYPE_NAMES:
            raise exporter.ExportError(f"{where}: dtype {dtype} has no passcheck name")
        text = f"{exporter.DTYPE_NAMES[dtype]}[{', '.join(_dim_text(s) for s in sizes)}]"
        if [hint_of(s) for s in strides] != exporter._contiguous_strides([hint_of(s) for s in sizes]):
            text += "{" + ", ".join(_dim_text(s) for s in strides) + "}"
        if device is not None and torch.device(device).type != "cpu":
            text += "@" + str(torch.device(device))
        return text

    exporter.format_constant, exporter._tensor_type = format_constant, tensor_type
    try:
        yield
    finally:
        exporter.format_constant, exporter._tensor_type = original_constant, original_type


def prepare_for_export(gm, substitute_scatter=False):
    """On a copy: symbolic scalar nodes inlined into their readers as sym(...) (passcheck
    graphs carry symbolic integers as expressions, not as nodes) and erased; multi-output
    nodes without a value counted (graph_trainer's split_with_sizes: the exporter types
    them from their getitems); backward-tagged nodes placed before the last forward node
    written as forward (passcheck's joint graphs are phase-contiguous); optionally torchtitan's
    deterministic_scatter_add written as aten::scatter_add(out, 0, index, src).
    Returns (copy, facts)."""
    gm = _copy_gm(gm)
    facts = {"inlined_scalar_nodes": 0, "untyped_multi_output_nodes": [], "rephased_to_forward": [],
             "scatter_add_substituted": 0}
    scalars = [n for n in gm.graph.nodes if _is_scalar_node(n)]
    scalar_set = set(scalars)
    for node in scalars:
        if not isinstance(node.meta.get("val"), (torch.SymInt, int)):
            raise exporter.ExportError(f"node '{node.name}': scalar {node.meta.get('val')!r} has no passcheck form")

    def inline(arg):
        if isinstance(arg, fx.Node) and arg in scalar_set:
            return _SymArg(arg.meta["val"])
        if isinstance(arg, (list, tuple)):
            return type(arg)(inline(a) for a in arg)
        if isinstance(arg, dict):
            return {k: inline(v) for k, v in arg.items()}
        return arg

    for node in gm.graph.nodes:
        if node in scalar_set or node.op != "call_function":
            continue
        if any(a in scalar_set for a in node.all_input_nodes):
            node.args, node.kwargs = inline(node.args), inline(node.kwargs)
    for node in reversed(scalars):
        if any(u not in scalar_set for u in node.users if u.op != "output"):
            raise exporter.ExportError(f"scalar node '{node.name}' still has readers")
        gm.graph.erase_node(node)
    facts["inlined_scalar_nodes"] = len(scalars)

    facts["untyped_multi_output_nodes"] = [n.name for n in gm.graph.nodes if n.op == "call_function"
                                           and "val" not in n.meta and n.users
                                           and all(u.target is operator.getitem for u in n.users)]

    ops = [n for n in gm.graph.nodes if _is_tensor_op(n)]
    forward_at = [i for i, n in enumerate(ops) if not _backward(n)]
    last_forward = forward_at[-1] if forward_at else -1
    for i, node in enumerate(ops[:last_forward]):
        if _backward(node):
            own = dict(node.meta.get("passcheck") or {})
            own["phase"] = "forward"
            node.meta["passcheck"] = own
            # The exporter lets PyTorch's backward flags win over the recorded phase (a
            # remat's copies): off on this copy (node_copy gave each node its own meta dict).
            for key in ("autograd_backward", "partitioner_tag", "is_backward"):
                node.meta.pop(key, None)
            facts["rephased_to_forward"].append(node.name)

    if substitute_scatter:
        for node in gm.graph.nodes:
            if node.op == "call_function" and _op_name(node) == SCATTER_OP:
                out, index, src = node.args
                node.target, node.args, node.kwargs = torch.ops.aten.scatter_add.default, (out, 0, index, src), {}
                facts["scatter_add_substituted"] += 1
    return gm, facts


def _backward(node):
    meta = node.meta
    return bool(meta.get("autograd_backward") or meta.get("partitioner_tag") == "is_backward")


def _op_name(node):
    schema = getattr(node.target, "_schema", None)
    if schema is None:
        return str(node.target)
    return schema.name + ("" if schema.overload_name in ("", "default") else "." + schema.overload_name)


def export_text(gm, kinds, symbol=None, claims=(), multiple_of=2, substitute_scatter=False):
    """passcheck graph text of `gm` (symbolic sizes written when `symbol` is
    (expr, hint, lower, upper)) and the export facts."""
    prepared, facts = prepare_for_export(gm, substitute_scatter)
    hints = {symbol[0]: symbol[1]} if symbol else {}
    with _symbolic_exporter(hints):
        text = exporter.export_graph(prepared, kinds=kinds)
    header = []
    if symbol:
        expr, hint, lower, upper = symbol
        header.append(f"symbol {expr} in [{lower}, {upper}] hint {hint}" + (f" multiple_of {multiple_of}" if multiple_of else ""))
        header += list(claims)
    facts["lines"] = text.count("\n")
    facts["slot_owner"] = {u.name: n.name for n in prepared.graph.nodes for u in n.users
                           if u.target is operator.getitem}
    return "\n".join(header + [text.rstrip("\n")]) + "\n", facts


# ---- passcheck graph text ----------------------------------------------------------------

_LINE = re.compile(r"^  (%.*?) = ([A-Za-z_][A-Za-z0-9_]*::[A-Za-z0-9_.]+)\((.*)\)(?:  #\{(.*)\})?$")
_CUSTOM = re.compile(r'"((?:[^"\\]|\\.)*)": "((?:[^"\\]|\\.)*)"')
_STATS = re.compile(r"(\w+)=(\d+)")


def passcheck_decisions(text, slot_owner):
    """The chunk decisions passcheck's metadata records in a chunked graph text."""
    regions, roles, body = {}, {}, {}
    splits = cats = adds = ops = 0
    for line in text.splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        ops += 1
        lhs, op, _, meta = m.groups()
        meta = meta or ""
        custom = dict(_CUSTOM.findall(meta[meta.find("custom={"):] if "custom={" in meta else ""))
        role = custom.get("chunk_role")
        if role is None:
            continue
        roles[role] = roles.get(role, 0) + 1
        key = (custom.get("chunk_region"), "backward" if "phase=backward" in meta else "forward")
        if role == "body":
            regions[key] = regions.get(key, 0) + 1
            orig = custom.get("chunk_orig")
            body.setdefault(key, {0: set(), 1: set()})[int(custom.get("chunk_id", 0))].add(slot_owner.get(orig, orig))
        if op == "aten::split_with_sizes" and role == "split_boundary":
            splits += 1
        elif role == "materialization" and op == "aten::cat":
            cats += 1
        elif role == "materialization" and op == "aten::add.Tensor":
            adds += 1
    return {"regions": len(regions), "region_body_nodes": {f"{k[0]} {k[1]}": v for k, v in sorted(regions.items())},
            "split_live_ins": splits, "materialized_cat": cats, "materialized_add": adds,
            "tensor_nodes_by_role": roles, "ops": ops, "_body": body}


def _compare_decisions(theirs, ours, op_of, examples=6):
    """Regions and per-region chunk-0 body node sets side by side; the nodes only one
    side duplicates, counted by (direction, operator)."""
    out = {"regions_equal": sorted(theirs["_body"]) == sorted(ours["_body"]),
           "regions_only_theirs": sorted(f"{k[0]} {k[1]}" for k in set(theirs["_body"]) - set(ours["_body"])),
           "regions_only_ours": sorted(f"{k[0]} {k[1]}" for k in set(ours["_body"]) - set(theirs["_body"])),
           "body_nodes_theirs": sum(len(v[0]) for v in theirs["_body"].values()),
           "body_nodes_ours": sum(len(v[0]) for v in ours["_body"].values()),
           "body_only_theirs": {}, "body_only_ours": {}, "examples_only_theirs": [], "examples_only_ours": []}
    for key in sorted(set(theirs["_body"]) & set(ours["_body"])):
        a, b = theirs["_body"][key][0], ours["_body"][key][0]
        for side, nodes in (("theirs", a - b), ("ours", b - a)):
            for name in sorted(nodes):
                tag = f"{key[1]} {op_of.get(name, name)}"
                out[f"body_only_{side}"][tag] = out[f"body_only_{side}"].get(tag, 0) + 1
                if len(out[f"examples_only_{side}"]) < examples:
                    out[f"examples_only_{side}"].append(f"{key[0]} {key[1]}: {name} ({op_of.get(name, name)})")
    out["body_sets_equal"] = out["regions_equal"] and not out["body_only_theirs"] and not out["body_only_ours"]
    return out


# Operators that only rearrange elements (their result's bits are a permutation/copy of the input's).
_REARRANGEMENTS = {"aten::t", "aten::view", "aten::_unsafe_view", "aten::transpose.int", "aten::permute",
                   "aten::reshape", "aten::alias", "aten::squeeze.dim", "aten::unsqueeze", "aten::expand"}


def _decision_differences(result, difference, gt_full):
    """The decisions side by side, each disagreement classified."""
    pc = result["passcheck_checks"]["chunk"]
    compared = {}
    for variant, label in (("no_early", "early accumulation off"), ("early", "early accumulation on")):
        entry, theirs = pc.get(variant, {}), gt_full.get(variant)
        if "decisions" not in entry or theirs is None:
            continue
        ours, cmp = entry["decisions"], entry["vs_graph_trainer"]
        compared[variant] = {k: {"graph_trainer": theirs[k], "passcheck": ours[k]}
                             for k in ("regions", "split_live_ins", "materialized_cat", "materialized_add")}
        compared[variant]["body_nodes_chunk0"] = {"graph_trainer": cmp["body_nodes_theirs"], "passcheck": cmp["body_nodes_ours"]}
        compared[variant]["tensor_ops_after"] = {
            "graph_trainer": (result["gt"]["nodes_after"] if variant == "no_early"
                              else result["gt_early_fixed"]["nodes_after"])["tensor_ops"],
            "passcheck": (entry.get("nodes") or [None, None])[1]}
        numerics_equal = entry.get("vs_graph_trainer_chunked", {}).get("equal") if variant == "no_early" else \
            entry.get("vs_eager_chunked", {}).get("equal")
        if not cmp["regions_equal"]:
            difference(f"chunked regions ({label}): only graph_trainer {cmp['regions_only_theirs']}, only passcheck "
                       f"{cmp['regions_only_ours']}", "unclassified", "regions should agree: review")
            result["problems"].append(f"chunked regions differ ({label})")
        for side, who in (("theirs", "graph_trainer"), ("ours", "passcheck")):
            only = cmp[f"body_only_{side}"]
            if not only:
                continue
            total = sum(only.values())
            exact = all(tag.split(" ", 1)[1] in _REARRANGEMENTS for tag in only)
            what = (f"{label}: {total} chunk-0 body nodes only {who} duplicates per chunk ({only}); e.g. "
                    f"{cmp[f'examples_only_{side}'][:3]}")
            if exact and numerics_equal:
                if side == "ours" and variant == "no_early":
                    why = ("where the two parameter-gradient partials are added: graph_trainer always cuts the "
                           "single-input gradient plumbing before the graph output (t/view after the grad mm) out of "
                           "the chunk body (_grad_output_suffix_nodes), even with disable_early_grad_accumulation, and "
                           "adds before it; passcheck's early-accumulation=false keeps it per chunk and adds at the "
                           "output, eager chunking's order. Only rearrangements lie in between, so the bits agree")
                elif side == "ours" and variant == "early":
                    why = ("graph_trainer's early accumulation also moves the cat of an activation-gradient live-out "
                           "before its view suffix (_materialization_boundary walks every backward live-out through "
                           "views: the code path of the insertion bug above); passcheck's moves only "
                           "parameter-gradient adds. Views are rearrangements, so the bits agree")
                else:
                    why = "the nodes only one side duplicates are rearrangements only and the bits agree"
                difference(what, "difference in semantics", why)
            else:
                difference(what, "unclassified", "not only rearrangements, or the numerics differ: review")
                result["problems"].append(f"unclassified body decision difference ({label}, only {who})")
        if theirs["split_live_ins"] != ours["split_live_ins"]:
            resplits = [s for s in theirs.get("_backward_splits", [])
                        if s["forward_materialization"] or s["forward_split_live_in"]]
            extra = theirs["split_live_ins"] - ours["split_live_ins"]
            if extra == len(resplits) and numerics_equal:
                difference(f"{label}: graph_trainer splits {theirs['split_live_ins']} live-ins, passcheck "
                           f"{ours['split_live_ins']}: graph_trainer splits again, for each backward region, the "
                           f"region's forward input ({[s['live_in'] for s in resplits][:5]}) that the forward region "
                           "already split (or the previous region's cat)", "difference in semantics",
                           "graph_trainer's provenance table holds only body live-outs, so a forward live-in's halves "
                           "are not reused by its backward region: split(cat(h0, h1)) recomputes h0, h1 exactly (same "
                           "bits) at the cost of a copy; passcheck's backward regions read the forward halves directly")
            else:
                difference(f"{label}: split live-ins graph_trainer {theirs['split_live_ins']} vs passcheck "
                           f"{ours['split_live_ins']}", "unclassified", "review")
                result["problems"].append(f"unclassified split difference ({label})")
        for key in ("materialized_cat", "materialized_add"):
            if theirs[key] != ours[key]:
                difference(f"{label}: {key} graph_trainer {theirs[key]} vs passcheck {ours[key]}", "unclassified", "review")
                result["problems"].append(f"unclassified {key} difference ({label})")
    result["decisions_compared"] = compared


def _strip(d):
    return {k: v for k, v in d.items() if not k.startswith("_")}


def passcheck_knows(passcheck, op, workdir):
    """Whether passcheck's graph reader accepts `op` (a parse + verify, nothing runs)."""
    path = os.path.join(workdir, "probe.graph")
    with open(path, "w") as f:
        f.write("graph(\n    arg %o : f32[4, 2],\n    arg %i : i64[3, 2],\n    arg %s : f32[3, 2]):\n"
                f"  %r : f32[4, 2] = {op}(%o, %i, %s)\n  return (%r)\n")
    code, text = _call(passcheck, ["prove", path])
    return code == 0, text.strip().splitlines()[-1:] if code else []


# ---- mutants -----------------------------------------------------------------------------

def mutant_drop_partial(gm):
    """A parameter gradient's add of the two chunk partials replaced by chunk 0's partial."""
    for node in gm.graph.nodes:
        if node.meta.get("chunked_region_role") == "materialization" and node.target is torch.ops.aten.add.Tensor \
                and node.meta.get("chunked_region_is_backward"):
            first = node.args[0]
            node.replace_all_uses_with(first)
            gm.graph.erase_node(node)
            gm.recompile()
            return f"{node.name}: add({first.name}, ...) -> {first.name}"
    return None


def mutant_swap_cat(gm):
    """A forward live-out's cat of the two chunks written chunk 1 first."""
    for node in gm.graph.nodes:
        if node.meta.get("chunked_region_role") == "materialization" and node.target is torch.ops.aten.cat.default \
                and not node.meta.get("chunked_region_is_backward"):
            parts = list(node.args[0])
            node.args = ([parts[1], parts[0]],) + tuple(node.args[1:])
            gm.recompile()
            return f"{node.name}: cat([{parts[0].name}, {parts[1].name}]) -> cat([{parts[1].name}, {parts[0].name}])"
    return None


MUTANTS = {"drop-chunk1-grad-partial": mutant_drop_partial, "swap-forward-cat-halves": mutant_swap_cat}


def _text_mutant(text, name):
    """The mutants on a passcheck graph text: a backward materialization add(p0, p1) written
    add(p0, p0) (chunk 1's partial replaced by chunk 0's), a forward cat's halves swapped."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = _LINE.match(line)
        if not m:
            continue
        lhs, op, args, meta = m.groups()
        if name == "drop-chunk1-grad-partial" and op == "aten::add.Tensor" and "phase=backward" in (meta or "") \
                and "_chunk_materialized" in lhs:
            a, b = [s.strip() for s in args.split(",")[:2]]
            lines[i] = line.replace(f"({a}, {b}", f"({a}, {a}", 1).replace(f"({a}, {b})", f"({a}, {a})", 1)
            if lines[i] != line:
                return "\n".join(lines) + "\n", f"{lhs.split(':')[0].strip()}: add({a}, {b}) -> add({a}, {a})"
        if name == "swap-forward-cat-halves" and op == "aten::cat" and "phase=backward" not in (meta or "") \
                and "_chunk0" in args and "_chunk1" in args:
            inner = args[args.index("[") + 1:args.index("]")]
            parts = [s.strip() for s in inner.split(",")]
            if len(parts) == 2:
                lines[i] = line.replace(f"[{inner}]", f"[{parts[1]}, {parts[0]}]", 1)
                return "\n".join(lines) + "\n", f"{lhs.split(':')[0].strip()}: cat halves swapped"
    return None, None


# ---- the verification --------------------------------------------------------------------

def verify_ep_chunk(mode, passcheck=None, workdir=None, threads=None, batch=None, seq=None, seed=0,
                    early_accumulation_fixed=True, mutants=True, keep_files=False):
    """Verifies graph_trainer's EP chunk pass in `mode` ("batch" or "seq") on deepseek_v3.
    Returns a dict of every measured fact (see the module docstring); `problems` lists the
    properties that must hold and did not. The graph files stay in `workdir` (a fresh
    temporary directory by default); the output archives (about 130 MB each) are removed
    unless keep_files, the inputs archive only when the directory is a temporary one."""
    user_workdir = workdir is not None
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    if threads:
        torch.set_num_threads(int(threads))
    threads = torch.get_num_threads()
    batch = batch or 2
    seq = seq or 32
    workdir = workdir or tempfile.mkdtemp(prefix=f"ep-chunk-{mode}-")
    os.makedirs(workdir, exist_ok=True)
    passcheck = find_passcheck(passcheck)
    timer = _Timer()
    result = {"mode": mode, "model": MODEL, "module_fqn": MODULE_FQN[mode], "batch": batch, "seq": seq,
              "seed": seed, "threads": threads, "torch": torch.__version__, "workdir": workdir,
              "passcheck": passcheck, "differences": [], "problems": [], "notes": []}
    differences, problems, notes = result["differences"], result["problems"], result["notes"]

    def difference(what, classification, why):
        differences.append({"what": what, "classification": classification, "why": why})

    # 1. trace
    with timer("trace"):
        step = trace(mode, seed, batch, seq)
    names = _output_names(step)
    inputs = [t.detach().clone() for t in step.flat_inputs()]
    kinds = step.kinds()
    symbol = chunk_symbol(step.gm)
    result["trace"] = {**_node_counts(step.gm), "num_static_inputs": step.traced.num_static_inputs,
                       "outputs": len(names)}
    if symbol is None:
        problems.append("the traced graph carries no chunk symbol")
        return _finish(result, timer)
    result["symbol"] = {"name": str(symbol[0]), "hint": symbol[1], "range": [symbol[2], symbol[3]],
                        # the values passcheck's claims are proved for (its chunk needs multiple_of 2)
                        "even_values_in_range": len(range(symbol[2] + symbol[2] % 2, symbol[3] + 1, 2))}
    with timer("torch_run_unchunked"):
        unchunked = _run(step.gm, inputs)
    base = _copy_gm(step.gm)  # the unchunked graph, kept for export and the variants

    # 2. graph_trainer's chunk pass, its pipeline's default first (early accumulation)
    from torchtitan.experiments.graph_trainer import ep_chunk_pass as ecp
    result["ep_roots_with_all_to_all"] = ecp._ep_roots(base, MODULE_FQN[mode])
    try:
        ecp.ep_overlap_chunk_pass(_copy_gm(base), mode=mode, module_pattern=MODULE_FQN[mode],
                                  num_static_inputs=step.traced.num_static_inputs, require_all_to_all=True)
        result["require_all_to_all"] = "accepted"
    except ValueError as error:
        result["require_all_to_all"] = f"refused: {error}"
        notes.append("CPU, one rank: no all_to_all_single in the graph (no EP process group), so "
                     "ep_overlap_chunk_pass(require_all_to_all=True) refuses; graph_trainer's pipeline passes "
                     "require_all_to_all = expert_parallel_degree > 1 = False here and takes the roots from the EP "
                     "annotations, as done below")
    default = _copy_gm(base)
    try:
        with timer("gt_chunk_default"):
            chunk(step, default, mode, early_accumulation=True)
        result["gt_default"] = {"ok": True, **_node_counts(default)}
    except Exception as error:  # noqa: BLE001 - recorded
        message = f"{type(error).__name__}: {str(error).splitlines()[0]}"
        result["gt_default"] = {"ok": False, "error": message}
        if "used before it has been defined" in message:
            difference("graph_trainer chunk pass, default config (early gradient accumulation, "
                       "optimize_grad_live_out=True): " + message, "bug in theirs",
                       "ep_chunk_pass._materialize_suffix_from_full_boundary creates the full shape's SymInt nodes "
                       "(_materialize_symint_args) at the outer insertion point, before the first full user, but "
                       "the view suffix right after the materialized cat/add, so the view reads sym_size nodes "
                       "defined after it and graph.lint() fails; hit by every backward live-out whose view suffix "
                       "has the chunk symbol in its shape (here the shared experts' w1/w3 input gradients: the "
                       "token-matrix mm result viewed back to [B, S, D]). Fix: create the shape nodes and the view "
                       "together after the "
                       "materialized value (verified below as gt_early_fixed). Minimized: "
                       "suites/torchtitan/upstream_bugs/ep_chunk_default_config_fails_lint.py")
        else:
            problems.append(f"graph_trainer's default chunk pass failed unexpectedly: {message}")
    del default

    chunked = _copy_gm(base)
    with timer("gt_chunk"):
        roots = chunk(step, chunked, mode, early_accumulation=False)
    gt = decisions(chunked)
    gt_full = {"no_early": gt, "gm": chunked}
    result["roots"] = roots
    result["gt"] = {"early_accumulation": False, "nodes_before": _node_counts(base), "nodes_after": _node_counts(chunked),
                    **_strip(gt)}

    # 3. numerics in torch
    with timer("torch_run_chunked"):
        chunked_out = _run(chunked, inputs)
    with timer("eager_chunked"):
        eager_out, wrapped, eager_state = eager_chunked_outputs(step, mode)
    eager_inputs_same = len(eager_state) == len(inputs) and all(_bitwise_equal(a, b) for a, b in zip(eager_state, inputs))
    result["eager_chunking"] = {"wrapped_modules": wrapped, "same_initial_state": eager_inputs_same}
    if not eager_inputs_same:
        problems.append("the eager-chunked model's initial state differs from the traced step's inputs")
    result["chunked_vs_eager_chunked"] = _compare(chunked_out, eager_out, names)
    result["chunked_vs_unchunked"] = _compare(chunked_out, unchunked, names)
    result["eager_chunked_vs_unchunked"] = _compare(eager_out, unchunked, names)
    wrapped_roots = sorted(wrapped)
    result["roots_equal_eager_wrapped"] = wrapped_roots == sorted(roots)
    if not result["roots_equal_eager_wrapped"]:
        problems.append(f"graph chunk roots {roots} differ from the eagerly wrapped modules {wrapped_roots}")
    if not result["chunked_vs_eager_chunked"]["equal"]:
        problems.append("graph-chunked step differs from eager chunking in "
                        f"{result['chunked_vs_eager_chunked']['differ_count']} outputs: "
                        f"{result['chunked_vs_eager_chunked']['differ'][:5]}")
    if not result["chunked_vs_unchunked"]["equal"]:
        same = result["chunked_vs_unchunked"]["differ"] == result["eager_chunked_vs_unchunked"]["differ"]
        difference(f"chunked graph vs unchunked graph: {result['chunked_vs_unchunked']['differ_count']} of "
                   f"{len(names)} outputs differ bitwise (max |diff| {result['chunked_vs_unchunked']['max_abs_diff']:.3g}); "
                   f"eager chunking differs from unchunked in the same outputs: {same}",
                   "difference in semantics",
                   "chunking is defined as eager chunking, which reorders reductions over the chunked dimension "
                   "(a parameter gradient is the sum of two half partial sums; per-chunk matmuls block differently); "
                   "the graph pass equals eager chunking bit for bit, which is its contract")

    # graph_trainer's early accumulation with the insertion fix
    if early_accumulation_fixed and not result["gt_default"]["ok"]:
        early = _copy_gm(base)
        try:
            with timer("gt_chunk_early_fixed"):
                chunk(step, early, mode, early_accumulation=True, fixed=True)
            with timer("torch_run_early_fixed"):
                early_out = _run(early, inputs)
            d = gt_full["early"] = decisions(early)
            breaking = layout_breaking_suffixes(early)
            result["gt_early_fixed"] = {"ok": True, "nodes_after": _node_counts(early), **_strip(d),
                                        "vs_eager_chunked": _compare(early_out, eager_out, names),
                                        "vs_no_early": _compare(early_out, chunked_out, names),
                                        "max_rel_diff_vs_eager_chunked": _max_rel_diff(early_out, eager_out),
                                        "layout_breaking_suffix_views": len(breaking),
                                        "layout_breaking_examples": breaking[:4]}
        except Exception as error:  # noqa: BLE001
            result["gt_early_fixed"] = {"ok": False, "error": f"{type(error).__name__}: {error}"[:400]}
        del early
        fixed = result["gt_early_fixed"]
        if fixed.get("ok") and not fixed["vs_eager_chunked"]["equal"]:
            cmp = fixed["vs_eager_chunked"]
            if fixed["layout_breaking_suffix_views"]:
                difference(f"graph_trainer's early gradient accumulation (with the insertion fix) computes wrong "
                           f"gradients in {mode} mode: {cmp['differ_count']} of {cmp['compared']} outputs differ from "
                           f"eager chunking, max relative error {fixed['max_rel_diff_vs_eager_chunked']:.3g} (not "
                           f"rounding); {fixed['layout_breaking_suffix_views']} materializations move a cat across a "
                           f"view that reorders the chunked extent, e.g. {fixed['layout_breaking_examples'][:1]}",
                           "bug in theirs",
                           "_materialization_boundary treats every view as a safe suffix: it cats the chunks of the "
                           "flattened token matrix on dim 0 and views the result back, but in seq mode the flattened "
                           "order is b*S+s while cat(dim 0) of per-chunk [B*S/2] matrices is chunk-major, so the view "
                           "puts chunk 1's tokens of batch 0 where batch 1's first half belongs (shared_experts w1/w3 "
                           "input gradients). Moving the cat across a reshape is only valid when the elements before "
                           "the chunked extent agree on both sides (true in batch mode). Latent today: the lint failure "
                           "stops the pass first. Minimized: suites/torchtitan/upstream_bugs/"
                           "ep_chunk_seq_early_accumulation_wrong_gradients.py")
            else:
                difference(f"graph_trainer's early gradient accumulation (with the insertion fix): "
                           f"{cmp['differ_count']} outputs differ from eager chunking", "unclassified", "review")
                problems.append("unclassified numerics difference of graph_trainer's early accumulation")

    # concretize (graph_trainer's last EP step before codegen): must not change a bit
    with timer("gt_concretize"):
        from torchtitan.experiments.graph_trainer.ep_pass_utils import concretize_ep_chunk_symbolic_shapes_pass
        concrete = _copy_gm(chunked)
        concretize_ep_chunk_symbolic_shapes_pass(concrete)
    result["concretized"] = _node_counts(concrete)

    def check_concretized():
        """torch's run of the concretized graph against the symbolic one (run when passcheck
        cannot vouch for both, or disagrees)."""
        if "vs_symbolic_chunked" in result["concretized"]:
            return
        with timer("torch_run_concretized"):
            out = _run(concrete, inputs)
        result["concretized"]["vs_symbolic_chunked"] = _compare(out, chunked_out, names)
        if not result["concretized"]["vs_symbolic_chunked"]["equal"]:
            problems.append("graph_trainer's concretize changed the chunked graph's numbers")

    def torch_mutant(name):
        broken = _copy_gm(concrete)
        what = MUTANTS[name](broken)
        entry = result["mutants"].setdefault(name, {})
        entry["mutation"] = what
        if what is None:
            entry["caught_by_torch"] = False
            problems.append(f"mutant {name}: nothing to mutate")
            return
        with timer("torch_run_mutants"):
            broken_out = _run(broken, inputs)
        cmp = _compare(broken_out, eager_out, names)
        entry["caught_by_torch"] = not cmp["equal"]
        entry["outputs_changed"] = cmp.get("differ_count")
        if cmp["equal"]:
            problems.append(f"mutant {name} ({what}) is not caught: outputs still equal eager chunking")

    # torch-side mutant (the rest run through passcheck equiv, or here when passcheck cannot)
    result["mutants"] = {}
    if mutants:
        torch_mutant("drop-chunk1-grad-partial")

    # 4/5. passcheck
    save_inputs(os.path.join(workdir, "inputs.pt"), inputs)
    if keep_files:
        torch.save(chunked_out, os.path.join(workdir, "torch_chunked_outputs.pt"))
    if passcheck is None:
        notes.append("no passcheck binary: the passcheck checks were skipped")
    else:
        _passcheck_checks(result, step, base, gt_full, concrete, chunked_out, eager_out, names, kinds, symbol,
                          passcheck, workdir, threads, timer, difference, mutants)
    if not result.get("passcheck_checks", {}).get("run_gt_chunked", {}).get("vs_torch", {}).get("equal"):
        check_concretized()
    if mutants:
        for name in MUTANTS:
            entry = result["mutants"].get(name, {})
            if "caught_by_torch" not in entry and not (entry.get("caught_by_passcheck_equiv")
                                                       or entry.get("caught_by_passcheck_run")):
                torch_mutant(name)
    if not keep_files:
        for name in os.listdir(workdir):
            if name.endswith(".pt") and (name != "inputs.pt" or not user_workdir):
                os.remove(os.path.join(workdir, name))
    return _finish(result, timer)


def _passcheck_checks(result, step, base, gt_full, concrete, chunked_out, eager_out, names, kinds, symbol,
                      passcheck, workdir, threads, timer, difference, mutants):
    problems, notes = result["problems"], result["notes"]
    mode = result["mode"]
    inputs_pt = os.path.join(workdir, "inputs.pt")
    pc = result["passcheck_checks"] = {}
    known, why = passcheck_knows(passcheck, SCATTER_OP, workdir)
    substitute = not known
    pc["knows_" + SCATTER_OP] = known
    if substitute:
        pc["scatter_substitution"] = (f"{SCATTER_OP}(out, index, src) written as aten::scatter_add(out, 0, index, src) "
                                      "(its definition in torchtitan/ops/scatter_add.py) because passcheck refused it: "
                                      + " ".join(why))
        notes.append("passcheck does not know " + SCATTER_OP + " yet: the passcheck runs use aten::scatter_add(out, 0, "
                     "index, src) in its place; rerun once the binary has the op")

    def path(name):
        return os.path.join(workdir, name)

    # 4. graph_trainer's chunked graph (concretized) run by passcheck
    with timer("export"):
        text, facts = export_text(concrete, kinds, substitute_scatter=substitute)
    with open(path("gt_chunked.graph"), "w") as f:
        f.write(text)
    pc["gt_chunked_export"] = {"lines": facts["lines"], "untyped_multi_output_nodes": len(facts["untyped_multi_output_nodes"]),
                               "rephased_to_forward": len(facts["rephased_to_forward"]),
                               "rephased_examples": facts["rephased_to_forward"][:6],
                               "scatter_add_substituted": facts["scatter_add_substituted"]}
    if facts["rephased_to_forward"]:
        difference(f"{len(facts['rephased_to_forward'])} nodes graph_trainer tags backward "
                   f"(autograd_backward, chunked_region_is_backward) stand before the last forward node, e.g. "
                   f"{facts['rephased_to_forward'][:3]}; passcheck's reader refuses 'forward node after the first "
                   "backward node', so they are exported as forward",
                   "difference in semantics",
                   "a backward region's body owns forward-position shape helpers (sym_size of a forward value whose "
                   "only reader is a backward view) and the live-in split is inserted before the first such "
                   "consumer: legal FX (topological), numerics unaffected, but the direction tags no longer split "
                   "the graph into a forward prefix and a backward suffix, which passcheck's joint graphs require "
                   "(and a later fwd/bwd partition by autograd_backward would misplace them)")
    with timer("passcheck_run_gt_chunked"):
        code, out = _call(passcheck, ["run", path("gt_chunked.graph"), "--inputs", inputs_pt, "--save-outputs",
                                      path("pc_run_gt_chunked.pt"), "--threads", threads])
    if code != 0:
        pc["run_gt_chunked"] = {"ok": False, "exit": code, "output": out.strip().splitlines()[-3:]}
        problems.append(f"passcheck run of graph_trainer's chunked graph failed (exit {code}): "
                        + " ".join(out.strip().splitlines()[-1:])[:300])
    else:
        cmp = _compare(load_outputs(path("pc_run_gt_chunked.pt")), chunked_out, names)
        pc["run_gt_chunked"] = {"ok": True, "vs_torch": cmp}
        if cmp["equal"]:
            result["concretized"]["vs_symbolic_chunked"] = (
                "not rerun in torch: passcheck's run of the concretized export equals torch's run of the symbolic "
                "chunked graph bit for bit")
        if not cmp["equal"]:
            problems.append(f"passcheck's executor differs from torch on graph_trainer's chunked graph in "
                            f"{cmp['differ_count']} outputs: {cmp['differ'][:5]}")

    # graph_trainer's symbolic chunked graph: its split assumption as a claim, over its own range
    text_sym, _ = export_text(gt_full["gm"], kinds, symbol=symbol, multiple_of=None, substitute_scatter=substitute,
                              claims=[f'claim split_halves "graph_trainer ep_chunk_pass" "every split_with_sizes of '
                                      f'the chunk dimension" "the two halves [{symbol[0]}//2, {symbol[0]}//2] add up to '
                                      f'the extent": {symbol[0]} == 2*floordiv({symbol[0]}, 2)'])
    with open(path("gt_chunked_symbolic_their_range.graph"), "w") as f:
        f.write(text_sym)
    code, out = _call(passcheck, ["prove", path("gt_chunked_symbolic_their_range.graph")])
    pc["prove_gt_split_claim_their_range"] = {"exit": code, "report": _prove_summary(out)}
    if code == 1:
        difference(f"graph_trainer's symbol {symbol[0]} ranges over [{symbol[2]}, {symbol[3]}] (mark_unbacked "
                   f"min=n//2, max=n) with no divisibility, and its chunked graph splits it as "
                   f"[{symbol[0]}//2, {symbol[0]}//2]: passcheck prove refutes 'the halves add up to the extent' "
                   f"({_counterexample(out)})",
                   "difference in semantics",
                   "graph_trainer only checks that the hint is even (mark_chunk_dynamic_dims) and concretizes the "
                   "symbol to the hint before codegen, so no odd extent ever runs; passcheck's chunk requires "
                   "'multiple_of 2' on the symbol and proves the split claims for every admissible value")
    text_sym2 = text_sym.replace(f"hint {symbol[1]}\n", f"hint {symbol[1]} multiple_of 2\n", 1)
    with open(path("gt_chunked_symbolic.graph"), "w") as f:
        f.write(text_sym2)
    code, out = _call(passcheck, ["prove", path("gt_chunked_symbolic.graph")])
    pc["prove_gt_split_claim_multiple_of_2"] = {"exit": code, "report": _prove_summary(out)}
    if code != 0:
        problems.append("graph_trainer's symbolic chunked graph with multiple_of 2: prove exit %d: %s"
                        % (code, " ".join(out.strip().splitlines()[-2:])[:300]))

    # 5. passcheck's own chunk pass on the unchunked symbolic graph
    with timer("export"):
        base_text, base_facts = export_text(base, kinds, symbol=symbol, multiple_of=2, substitute_scatter=substitute)
    with open(path("unchunked_symbolic.graph"), "w") as f:
        f.write(base_text)
    pc["unchunked_export"] = {"lines": base_facts["lines"], "inlined_scalar_nodes": base_facts["inlined_scalar_nodes"],
                              "symbol_line": base_text.splitlines()[0]}
    modules = ",".join(result["roots"])
    op_of = {n.name: _op_name(n) for n in base.graph.nodes if n.op == "call_function"}
    variants = {"no_early": "false", "early": "true"}
    pc["chunk"] = {}
    for variant, early in variants.items():
        entry = pc["chunk"][variant] = {}
        pipeline = f'chunk{{mode={mode},modules="{modules}",early-accumulation={early}}}'
        entry["pipeline"] = pipeline
        sym_path, conc_path = path(f"pc_chunked_{variant}_symbolic.graph"), path(f"pc_chunked_{variant}.graph")
        with timer("passcheck_chunk"):
            code, out = _call(passcheck, ["opt", path("unchunked_symbolic.graph"), "--pipeline", pipeline, "-o", sym_path])
        if code != 0:
            entry["error"] = out.strip().splitlines()[-3:]
            problems.append(f"passcheck chunk ({variant}) failed: " + " ".join(out.strip().splitlines()[-1:])[:300])
            continue
        entry["stats"] = ({k: int(v) for k, v in _STATS.findall(out.split(": changed,")[-1])}
                          if ": changed," in out else out.strip())
        m = re.search(r"nodes (\d+) -> (\d+)", out)
        if m:
            entry["nodes"] = [int(m.group(1)), int(m.group(2))]
        with open(sym_path) as f:
            ours = passcheck_decisions(f.read(), base_facts["slot_owner"])
        entry["decisions"] = _strip(ours)
        gt_variant = gt_full.get(variant)
        if gt_variant is not None:
            entry["vs_graph_trainer"] = _compare_decisions(gt_variant, ours, op_of)
        with timer("passcheck_prove"):
            code, out = _call(passcheck, ["prove", sym_path])
        entry["prove"] = {"exit": code, "report": _prove_summary(out)}
        if code != 0:
            problems.append(f"passcheck prove of its chunked graph ({variant}): exit {code}: {_prove_summary(out)}")
        code, out = _call(passcheck, ["opt", sym_path, "--pipeline", "concretize", "-o", conc_path])
        if code != 0:
            entry["concretize_error"] = out.strip().splitlines()[-2:]
            problems.append(f"passcheck concretize ({variant}) failed: " + " ".join(out.strip().splitlines()[-1:])[:300])
            continue
        with timer("passcheck_run_pc_chunked"):
            code, out = _call(passcheck, ["run", conc_path, "--inputs", inputs_pt, "--save-outputs",
                                          path(f"pc_run_{variant}.pt"), "--threads", threads])
        if code != 0:
            entry["run_error"] = out.strip().splitlines()[-3:]
            problems.append(f"passcheck run of its chunked graph ({variant}) failed: "
                            + " ".join(out.strip().splitlines()[-1:])[:300])
            continue
        ours_out = load_outputs(path(f"pc_run_{variant}.pt"))
        entry["vs_eager_chunked"] = _compare(ours_out, eager_out, names)
        entry["vs_graph_trainer_chunked"] = _compare(ours_out, chunked_out, names)
        if variant == "no_early" and not entry["vs_eager_chunked"]["equal"]:
            problems.append(f"passcheck's chunk (early-accumulation=false) differs from eager chunking in "
                            f"{entry['vs_eager_chunked']['differ_count']} outputs")
    _decision_differences(result, difference, gt_full)

    # passcheck-side mutants: the first through `passcheck equiv` against graph_trainer's
    # chunked graph (exit 1: differs), the others through `passcheck run` and a bitwise
    # comparison with passcheck's run of the intact graph (one graph run each instead of two)
    if mutants and pc.get("run_gt_chunked", {}).get("ok"):
        with open(path("gt_chunked.graph")) as f:
            text = f.read()
        intact = load_outputs(path("pc_run_gt_chunked.pt"))
        for index, name in enumerate(MUTANTS):
            broken, what = _text_mutant(text, name)
            entry = result["mutants"].setdefault(name, {})
            key = "caught_by_passcheck_equiv" if index == 0 else "caught_by_passcheck_run"
            if broken is None:
                entry[key] = False
                problems.append(f"mutant {name}: nothing to mutate in the exported graph")
                continue
            mpath = path(f"mutant_{name}.graph")
            with open(mpath, "w") as f:
                f.write(broken)
            entry["passcheck_mutation"] = what
            with timer("passcheck_mutants"):
                if index == 0:
                    code, out = _call(passcheck, ["equiv", path("gt_chunked.graph"), mpath, "--inputs", inputs_pt,
                                                  "--threads", threads])
                    entry["equiv_exit"] = code
                    entry[key] = code == 1
                else:
                    code, out = _call(passcheck, ["run", mpath, "--inputs", inputs_pt, "--save-outputs",
                                                  path(f"mutant_{name}.pt"), "--threads", threads])
                    entry["run_exit"] = code
                    if code == 0:
                        cmp = _compare(load_outputs(path(f"mutant_{name}.pt")), intact, names)
                        entry["outputs_changed"] = cmp.get("differ_count")
                        entry[key] = not cmp["equal"]
                    else:
                        entry[key] = False
            if not entry[key]:
                problems.append(f"mutant {name} not caught through passcheck (exit {code}): "
                                + " ".join(out.strip().splitlines()[-1:])[:200])


def _prove_summary(text):
    lines = [l for l in text.strip().splitlines() if "claims:" in l or "refuted" in l or "counterexample" in l]
    return " | ".join(lines[-3:]) if lines else " ".join(text.strip().splitlines()[-1:])[:300]


def _counterexample(text):
    m = re.search(r"counterexample[^\n]*", text)
    return m.group(0) if m else "refuted"


def _finish(result, timer):
    result["times_s"] = dict(timer.times)
    result["ok"] = not result["problems"]
    return result
