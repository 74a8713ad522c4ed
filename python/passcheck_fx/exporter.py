"""torch.fx -> passcheck graph text (docs/graph-format.md).

Converts a GraphModule of aten operators (make_fx, AOTAutograd, or the output of a
torch.fx pass over one) into the text passcheck parses, so `passcheck run` and
`passcheck equiv` can execute it with LibTorch's kernels and compare it bit for bit.
Types come from `meta['val']` (PyTorch 2.x fake tensors), `meta['tensor_meta']`
(make_fx in 1.13, ShapeProp) or a ShapeProp run on given example inputs; node metadata
maps to passcheck's keys. What cannot be mapped raises ExportError naming the node.
"""
import operator
import re

import torch
import torch.fx

__all__ = ["ExportError", "export_graph", "export_partitioned", "format_constant"]


class ExportError(Exception):
    """A node or value the exporter cannot express in passcheck's graph text."""


DTYPE_NAMES = {torch.float16: "f16", torch.bfloat16: "bf16", torch.float32: "f32", torch.float64: "f64",
               torch.int8: "i8", torch.int16: "i16", torch.int32: "i32", torch.int64: "i64",
               torch.uint8: "u8", torch.bool: "b8", torch.complex64: "c64", torch.complex128: "c128"}
INPUT_KINDS = ("param", "buffer", "arg")
RECOMPUTE_NAMES = {"MUST_SAVE": "must_save", "PREFER_SAVE": "prefer_save",
                   "MUST_RECOMPUTE": "must_recompute", "PREFER_RECOMPUTE": "prefer_recompute"}
_NAME_CHARS = re.compile(r"[A-Za-z0-9_.]+")

try:  # PyTorch 1.13 and 2.x both have OpOverload here; older builds do not.
    from torch._ops import OpOverload as _OpOverload
except ImportError:  # pragma: no cover
    _OpOverload = None


def _is_op_overload(target):
    if _OpOverload is not None and isinstance(target, _OpOverload):
        return True
    return hasattr(target, "_schema") and hasattr(target, "overloadpacket")


def _op_name(node):
    schema = node.target._schema
    return schema.name + ("" if schema.overload_name == "" else "." + schema.overload_name)


# ---- constants ---------------------------------------------------------------------------

def _quote(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t") + '"'


def _format_float(value):
    if value != value:
        return "nan"
    if value in (float("inf"), float("-inf")):
        return "inf" if value > 0 else "-inf"
    text = repr(float(value))
    return text if ("." in text or "e" in text or "n" in text) else text + ".0"


def format_constant(value, where="a constant"):
    """One argument in passcheck's syntax; fx Nodes are written by the caller's `ref`."""
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _format_float(value)
    if isinstance(value, str):
        return _quote(value)
    if isinstance(value, torch.dtype):
        return str(value)  # torch.float32
    if isinstance(value, torch.layout):
        return str(value)  # torch.strided
    if isinstance(value, torch.memory_format):
        return str(value)  # torch.contiguous_format
    if isinstance(value, torch.device):
        return f'device("{value}")'
    raise ExportError(f"{where}: cannot write constant {value!r} of type {type(value).__name__}")


# ---- types -------------------------------------------------------------------------------

def _contiguous_strides(sizes):
    strides, running = [], 1
    for size in reversed(sizes):
        strides.append(running)
        running *= max(size, 1)
    return list(reversed(strides))


def _tensor_type(dtype, sizes, strides, device, where):
    if dtype not in DTYPE_NAMES:
        raise ExportError(f"{where}: dtype {dtype} has no passcheck name")
    try:
        sizes = [int(s) for s in sizes]
        strides = [int(s) for s in strides]
    except TypeError as error:  # a symbolic size (SymInt without a hint)
        raise ExportError(f"{where}: symbolic sizes are not exported ({error})")
    text = f"{DTYPE_NAMES[dtype]}[{', '.join(map(str, sizes))}]"
    if strides != _contiguous_strides(sizes):
        text += "{" + ", ".join(map(str, strides)) + "}"
    if device is not None and torch.device(device).type != "cpu":
        text += "@" + str(torch.device(device))
    return text


def _describe(meta, where):
    """passcheck type of one value from a fake/real tensor, a TensorMetadata or a number."""
    if isinstance(meta, torch.Tensor):
        return _tensor_type(meta.dtype, meta.shape, meta.stride(), meta.device, where)
    if hasattr(meta, "dtype") and hasattr(meta, "shape") and hasattr(meta, "stride"):  # TensorMetadata
        return _tensor_type(meta.dtype, meta.shape, meta.stride, None, where)
    if meta is None:
        return "None"
    if isinstance(meta, bool):
        return "bool"
    if isinstance(meta, int) or type(meta).__name__ == "SymInt":
        return "int"
    if isinstance(meta, float) or type(meta).__name__ == "SymFloat":
        return "float"
    raise ExportError(f"{where}: no passcheck type for {type(meta).__name__}")


_SCALAR_EXAMPLES = {"bool": False, "int": 0, "float": 0.0}


def _scalar_returns(node):
    """Example values of the schema's return types when they are all bool/int/float."""
    kinds = [str(r.type) for r in node.target._schema.returns]
    if not kinds or any(k not in _SCALAR_EXAMPLES for k in kinds):
        return None
    examples = [_SCALAR_EXAMPLES[k] for k in kinds]
    return examples if len(examples) > 1 else examples[0]


def _node_value_meta(node):
    if "val" in node.meta:
        return node.meta["val"], True
    if "tensor_meta" in node.meta:
        return node.meta["tensor_meta"], True
    return None, False


# ---- node metadata -----------------------------------------------------------------------

def _module_fqn(stack):
    if not stack:
        return None
    key, value = list(stack.items())[-1]
    path = value[0] if isinstance(value, tuple) else key
    path = re.sub(r"^L\['self'\]\.?", "", str(path))  # dynamo's prefix
    return path or None


def _phase(meta):
    if meta.get("partitioner_tag") == "is_backward" or meta.get("autograd_backward") or meta.get("is_backward"):
        return "backward"
    return meta.get("passcheck_phase")


def _recompute(value):
    if value is None or value is False:
        return None
    if value is True:
        return "prefer_recompute"
    name = getattr(value, "name", str(value)).split(".")[-1].upper()
    return RECOMPUTE_NAMES.get(name)


def _meta_suffix(node, phase_override=None):
    # meta["passcheck"]: what passcheck's Python writer recorded (export-python), so a
    # graph that went through a Python pass keeps its own metadata; else PyTorch's keys.
    meta, parts = node.meta, []
    own = meta.get("passcheck") if isinstance(meta.get("passcheck"), dict) else {}
    # PyTorch's backward flag wins over the recorded phase: a pass that copies a forward
    # node into the backward (a remat) copies its record too, and marks the copy backward.
    phase = phase_override or ("backward" if _phase(meta) == "backward" else None) or own.get("phase") or _phase(meta)
    if phase and phase != "forward":
        parts.append(f"phase={phase}")
    # A node passcheck's writer made carries its metadata in PyTorch's keys too ("keys":
    # "pytorch"): those are what a Python pass edits, so they win, absent ones included.
    if own.get("keys") == "pytorch":
        own = {"phase": own.get("phase")}
    custom = own.get("custom") or meta.get("custom")
    # torchtitan's tracer records no module stack; its annotate_module_fqns puts the
    # module's FQN in custom["module_fqn"] instead.
    titan_fqn = custom.get("module_fqn") if isinstance(custom, dict) else None
    fqn = own.get("fqn") or _module_fqn(meta.get("nn_module_stack")) or (str(titan_fqn) if titan_fqn else None)
    if fqn:
        parts.append(f"fqn={_quote(fqn)}")
    seq = own.get("seq", meta.get("seq_nr"))
    if isinstance(seq, int):
        parts.append(f"seq={seq}")
    recompute = own.get("recompute") or _recompute(meta.get("recompute"))
    # A recompute policy is a forward node's; a node a remat pass copied into the backward
    # keeps its original's in FX (graph_trainer's duplicates do), which says nothing there.
    if recompute and phase != "backward":
        parts.append(f"recompute={recompute}")
    ac_region = own.get("ac_region", meta.get("ac_graph_id"))
    if isinstance(ac_region, int):
        parts.append(f"ac_region={ac_region}")
    if isinstance(custom, dict) and custom:
        entries = ", ".join(f"{_quote(str(k))}: {_quote(str(v))}" for k, v in sorted(custom.items(), key=lambda kv: str(kv[0])))
        parts.append("custom={" + entries + "}")
    return ("  #{" + ", ".join(parts) + "}") if parts else ""


# ---- the graph ---------------------------------------------------------------------------

def _input_kind(name, kinds, node=None):
    if not (kinds and name in kinds) and node is not None and node.meta.get("passcheck_kind") in INPUT_KINDS:
        return node.meta["passcheck_kind"]  # recorded by passcheck's Python writer
    if kinds and name in kinds:
        kind = kinds[name]
        if kind not in INPUT_KINDS:
            raise ExportError(f"placeholder '{name}': kind '{kind}' is not one of {', '.join(INPUT_KINDS)}")
        return kind
    for kind in ("param", "buffer"):
        if name.startswith(kind + "_") or name.startswith(kind + "s_"):
            return kind
    return "arg"


def _check_name(name, where):
    if not _NAME_CHARS.fullmatch(name):
        raise ExportError(f"{where}: name '{name}' has characters passcheck names cannot hold")
    return name


def _ensure_meta(gm, example_inputs, meta_from):
    """Copies types by name from `meta_from` and, when something still lacks one, runs
    ShapeProp on `example_inputs`."""
    if meta_from is not None:
        known = {n.name: n.meta for n in meta_from.graph.nodes}
        for node in gm.graph.nodes:
            if not _node_value_meta(node)[1] and node.name in known:
                for key in ("val", "tensor_meta"):
                    if key in known[node.name]:
                        node.meta[key] = known[node.name][key]
    missing = [n for n in gm.graph.nodes if n.op in ("placeholder", "call_function")
               and n.target is not operator.getitem and not _node_value_meta(n)[1]]
    if missing and example_inputs is not None:
        from torch.fx.passes.shape_prop import ShapeProp
        ShapeProp(gm).propagate(*[t.detach().clone() if isinstance(t, torch.Tensor) else t for t in example_inputs])


def _result_count(node, val, returns):
    """How many values a node with a tuple or Tensor[] result gives: its value's length;
    else a fixed tuple's schema; else (a Tensor[] result without a value: the
    split_with_sizes nodes graph_trainer's chunk pass creates type only their getitems)
    the length of its split_sizes argument, or the getitems' highest index + 1."""
    if isinstance(val, (list, tuple)):
        return len(val)
    if len(returns) > 1:
        return len(returns)
    where = f"node '{node.name}' ({_op_name(node)})"
    getitems = [u for u in node.users if u.op == "call_function" and u.target is operator.getitem]
    if len(getitems) != len(node.users) or not all(isinstance(u.args[1], int) and u.args[1] >= 0 for u in getitems):
        raise ExportError(f"{where}: its {returns[0].type} result has no meta['val'] and is used other than "
                          "through getitem with an index, so the number of its values is unknown")
    highest = max((u.args[1] for u in getitems), default=-1)
    names = [a.name for a in node.target._schema.arguments]
    if "split_sizes" in names:
        i = names.index("split_sizes")
        sizes = node.args[i] if i < len(node.args) else node.kwargs.get("split_sizes")
        if isinstance(sizes, (list, tuple)):
            if highest >= len(sizes):
                raise ExportError(f"{where}: getitem {highest} of {len(sizes)} split sizes")
            return len(sizes)
    if highest < 0:
        raise ExportError(f"{where}: its {returns[0].type} result has no meta['val'] and no getitem users, so "
                          "the number of its values is unknown")
    return highest + 1


def _schema_arguments(node, ref):
    """The node's arguments in schema order (kwarg-only ones included), trailing
    arguments that were not given left out (they take their schema defaults)."""
    schema = node.target._schema
    given = list(node.args)
    if len(given) > len(schema.arguments):
        raise ExportError(f"node '{node.name}' ({_op_name(node)}): {len(given)} arguments for {schema}")
    values, last_given = [], len(given) - 1
    for i, argument in enumerate(schema.arguments):
        if i < len(given):
            values.append(given[i])
        elif argument.name in node.kwargs:
            values.append(node.kwargs[argument.name])
            last_given = i
        elif argument.default_value is not None or argument.type.kind() == "OptionalType":
            values.append(argument.default_value)
        else:
            values.append(_MISSING)
    unknown = set(node.kwargs) - {a.name for a in schema.arguments}
    if unknown:
        raise ExportError(f"node '{node.name}' ({_op_name(node)}): unknown keyword arguments {sorted(unknown)}")
    values = values[:last_given + 1]
    if any(v is _MISSING for v in values):
        raise ExportError(f"node '{node.name}' ({_op_name(node)}): a required argument is missing")
    return ", ".join(ref(v, f"node '{node.name}' ({_op_name(node)})") for v in values)


_MISSING = object()


def _attr(gm, node):
    value = gm
    for part in node.target.split("."):
        value = getattr(value, part)
    return value


def placeholder_kinds(gm):
    """Placeholder name, target and passcheck name -> the kind passcheck's Python writer
    recorded (meta["passcheck_kind"]), for the graphs a pass derives from a written one."""
    out = {}
    for node in gm.graph.nodes:
        if node.op == "placeholder" and "passcheck_kind" in node.meta:
            for key in (node.name, node.target, node.meta.get("passcheck_name")):
                if key is not None:
                    out[key] = node.meta["passcheck_kind"]
    return out


def lifted_constants(gm):
    """The tensors of gm's get_attr nodes in graph order: the trailing inputs
    export_graph(..., lift_constants=True) declares for them."""
    return [_attr(gm, n) for n in gm.graph.nodes if n.op == "get_attr"]


def export_graph(gm, kinds=None, example_inputs=None, meta_from=None, header=None, lift_constants=False):
    """passcheck graph text of `gm` (a torch.fx GraphModule of aten OpOverloads).

    kinds: placeholder name -> "param" | "buffer" | "arg" (others: by name prefix
    "param_"/"buffer_", else "arg"). example_inputs: run ShapeProp when a node has no
    `val`/`tensor_meta`. meta_from: a GraphModule whose same-named nodes lend their types
    (a partitioner's output graphs take them from the joint graph). lift_constants: tensor
    constants (get_attr nodes, e.g. make_fx's _tensor_constant0) become trailing `buffer`
    inputs, whose values lifted_constants(gm) returns; otherwise they are an error."""
    return _export(gm, kinds, example_inputs, meta_from, header, lift_constants)[0]


def _export(gm, kinds=None, example_inputs=None, meta_from=None, header=None, lift_constants=False, phase=None):
    """export_graph's text, and (fx name, slot or None) per passcheck input and output."""
    _ensure_meta(gm, example_inputs, meta_from)
    graph = gm.graph
    names = {}       # fx node -> passcheck value name (a multi-output node has none)
    outputs_of = {}  # multi-output fx node -> list of (name or None)
    used_names = set()

    for node in graph.nodes:
        if node.op == "call_function" and node.target is operator.getitem:
            source, index = node.args
            if source not in outputs_of or not isinstance(index, int):
                raise ExportError(f"node '{node.name}': getitem of '{getattr(source, 'name', source)}' "
                                  "that is not an operator's tuple result")
            if not -len(outputs_of[source]) <= index < len(outputs_of[source]):
                raise ExportError(f"node '{node.name}': getitem {index} of '{source.name}', which has "
                                  f"{len(outputs_of[source])} values")
            outputs_of[source][index] = node.name
        elif node.op == "call_function" and _is_op_overload(node.target):
            returns = node.target._schema.returns
            val, _ = _node_value_meta(node)
            multi = len(returns) > 1 or (len(returns) == 1 and str(returns[0].type).startswith("List["))
            if multi:
                outputs_of[node] = [None] * _result_count(node, val, returns)
            elif returns:
                names[node] = node.name
        elif node.op == "placeholder":
            val, _ = _node_value_meta(node)
            if isinstance(val, (list, tuple)) and node.users and all(u.target is operator.getitem for u in node.users):
                outputs_of[node] = [None] * len(val)
            else:
                names[node] = node.name
        elif node.op == "get_attr" and lift_constants:
            if not isinstance(_attr(gm, node), torch.Tensor):
                raise ExportError(f"node '{node.name}': get_attr '{node.target}' is not a tensor")
            names[node] = node.name
        elif node.op == "call_function":
            raise ExportError(f"node '{node.name}': target {getattr(node.target, '__name__', node.target)!r} is not "
                              "an aten OpOverload (trace with make_fx / AOTAutograd to get aten ops)")
        elif node.op != "output":
            raise ExportError(f"node '{node.name}': op '{node.op}' (target {node.target!r}) cannot be exported; "
                              "only placeholders, aten OpOverload calls, getitem and the output are")
        used_names.add(node.name)

    def ref(value, where):
        if isinstance(value, torch.fx.Node):
            if value not in names:
                raise ExportError(f"{where}: uses '{value.name}', which has no single value "
                                  "(a tuple result used without getitem, or an unexported node)")
            return "%" + names[value]
        if isinstance(value, (list, tuple)):
            return "[" + ", ".join(ref(v, where) for v in value) + "]"
        return format_constant(value, where)

    slot_names = {}  # multi-value node -> the passcheck name of each slot

    def slot_values(node, val, where):
        """(name, type) per slot of a multi-value node; an unused slot still needs a name."""
        slots = outputs_of[node]
        metas = list(val) if isinstance(val, (list, tuple)) else [val] * len(slots)
        if len(metas) != len(slots):
            raise ExportError(f"{where}: {len(slots)} results but types for {len(metas)}")
        out = []
        for i, name in enumerate(slots):
            if name is None:
                name, k = f"{node.name}_unused{i}", 0
                while name in used_names:
                    k += 1
                    name = f"{node.name}_unused{i}_{k}"
                used_names.add(name)
            out.append((_check_name(name, where), _describe(metas[i], where)))
        slot_names[node] = [name for name, _ in out]
        return out

    inputs, body, result, lifted = [], [], None, []
    input_slots, output_slots = [], []  # (fx name, slot index or None) per passcheck input / output
    for node in graph.nodes:
        where = f"node '{node.name}'"
        if node.op == "placeholder":
            val, found = _node_value_meta(node)
            if not found:
                raise ExportError(f"placeholder '{node.name}' has no type (no meta['val'] or meta['tensor_meta']; "
                                  "pass example_inputs to run ShapeProp)")
            if node in outputs_of:  # a saved tuple (functorch's partitioners): one input per slot
                for i, (name, type_text) in enumerate(slot_values(node, val, where)):
                    inputs.append(f"    {_input_kind(node.name, kinds, node)} %{name} : {type_text}")
                    input_slots.append((node.name, i))
                continue
            input_slots.append((node.name, None))
            inputs.append(f"    {_input_kind(node.name, kinds, node)} %{_check_name(node.name, where)} : {_describe(val, where)}")
        elif node.op == "call_function" and node.target is operator.getitem:
            names[node] = node.name
        elif node.op == "get_attr":
            lifted.append(f"    buffer %{_check_name(node.name, where)} : {_describe(_attr(gm, node), where)}")
        elif node.op == "call_function" and _is_op_overload(node.target):
            op = _op_name(node)
            where = f"node '{node.name}' ({op})"
            val, found = _node_value_meta(node)
            if node in outputs_of and not found:  # make_fx in 1.13 types only the getitems
                by_index = {u.args[1]: _node_value_meta(u) for u in node.users if u.target is operator.getitem}
                if all(by_index.get(i, (None, False))[1] for i in range(len(outputs_of[node]))):
                    val, found = [by_index[i][0] for i in range(len(outputs_of[node]))], True
            if not found and _scalar_returns(node) is not None:  # a bool/int/float result carries no tensor meta
                val, found = _scalar_returns(node), True
            # A value passcheck's own text left untyped (`%v : Tensor`, a graph read back
            # by the Python writer) stays untyped.
            untyped = not found and node.meta.get("passcheck_type") == "Tensor" and node not in outputs_of
            if not found and not untyped and node.target._schema.returns:
                raise ExportError(f"{where} has no type (no meta['val'] or meta['tensor_meta']; "
                                  "pass example_inputs to run ShapeProp)")
            if untyped:
                lhs = f"%{_check_name(node.name, where)} : Tensor"
            elif node in outputs_of:
                lhs = ", ".join(f"%{name} : {type_text}" for name, type_text in slot_values(node, val, where))
            elif node.target._schema.returns:
                lhs = f"%{_check_name(node.name, where)} : {_describe(val, where)}"
            else:
                lhs = "()"
            body.append(f"  {lhs} = {op}({_schema_arguments(node, ref)}){_meta_suffix(node, phase)}")
        elif node.op == "output":
            values = node.args[0]
            values = list(values) if isinstance(values, (list, tuple)) else [values]
            for i, v in enumerate(values):
                if not isinstance(v, torch.fx.Node):
                    raise ExportError(f"output {i} is {v!r}, not a node's value (passcheck graphs return values only)")
            refs = []
            for v in values:
                if v in outputs_of:  # a tuple returned whole (a partitioner's saved value): every slot
                    refs += ["%" + name for name in slot_names[v]]
                    output_slots.extend((v.name, i) for i in range(len(slot_names[v])))
                else:
                    refs.append(ref(v, f"output '{v.name}'"))
                    output_slots.append((v.name, None))
            result = "  return (" + ", ".join(refs) + ")"
    if result is None:
        raise ExportError("the graph has no output node")
    inputs += lifted
    lines = [f"# {line}" for line in (header or "").splitlines()]
    lines.append("graph(\n" + ",\n".join(inputs) + "):" if inputs else "graph():")
    lines += body
    lines.append(result)
    return "\n".join(lines) + "\n", input_slots, output_slots


def export_partitioned(joint, forward, backward, num_fwd_outputs, kinds=None, example_inputs=None, returns=None):
    """A passcheck module (docs/graph-format.md "Modules") of a partitioner's result:
    part `forward` then part `backward`, linked by value names (functorch's partitioners
    name the backward's inputs after the forward values they receive; a saved tuple is
    linked slot by slot), returning the joint graph's outputs (forward results, then the
    backward's). example_inputs: the joint's inputs, to type values the partitioner's
    graphs carry no types for (ShapeProp on a copy of the joint). returns: per joint output,
    its position among (forward results..., backward results...) when the joint does not
    list them in that order."""
    meta_source = joint
    if example_inputs is not None:
        import copy
        from torch.fx.passes.shape_prop import ShapeProp
        meta_source = copy.deepcopy(joint)
        ShapeProp(meta_source).propagate(*[t.detach().clone() if isinstance(t, torch.Tensor) else t for t in example_inputs])
    joint_inputs = [n.name for n in joint.graph.nodes if n.op == "placeholder"]
    forward_text, _, forward_outputs = _export(forward, kinds, meta_from=meta_source)
    # Every node of the backward part runs in the backward, the forward nodes a
    # partitioner recomputes there included (their metadata, copied from the joint, says
    # forward).
    backward_text, backward_inputs, backward_outputs = _export(backward, kinds, meta_from=meta_source,
                                                               phase="backward")
    saved = forward_outputs[num_fwd_outputs:]
    sources = []
    for name, slot in backward_inputs:
        if (name, slot) in saved:
            sources.append(f"forward.{num_fwd_outputs + saved.index((name, slot))}")
        elif slot is None and name in joint_inputs:
            sources.append("-")
        else:
            raise ExportError(f"backward input '{name}'{'' if slot is None else f' slot {slot}'} is neither a "
                              "forward output nor a joint input")
    joint_outputs = [n for n in joint.graph.nodes if n.op == "output"][0].args[0]
    joint_count = len(joint_outputs) if isinstance(joint_outputs, (list, tuple)) else 1
    if joint_count != num_fwd_outputs + len(backward_outputs):
        raise ExportError(f"the joint graph returns {joint_count} values, the parts "
                          f"{num_fwd_outputs} + {len(backward_outputs)}")
    results = [f"forward.{i}" for i in range(num_fwd_outputs)] + [f"backward.{i}" for i in range(len(backward_outputs))]
    returns = results if returns is None else [results[i] for i in returns]
    lines = [f"module inputs ({', '.join('%' + n for n in joint_inputs)}) returns ({', '.join(returns)})",
             "part forward", forward_text.rstrip("\n"),
             f"part backward from ({', '.join(sources)})", backward_text.rstrip("\n")]
    return "\n".join(lines) + "\n"
