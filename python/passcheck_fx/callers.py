"""What a Python pass is handed: the graph and the context its real caller gives it.

A pass is written against what its caller provides. torch.fx passes and graph_trainer's
passes read `node.meta["val"]` (a FakeTensor from the fake mode the graph was traced in),
`seq_nr`, `nn_module_stack`, `custom` and `stack_trace`; inductor's joint-graph and
post-grad passes also read `V.fake_mode` and the tracing context their caller
(`compile_fx`) sets. A pass handed less silently does nothing (a pass keyed on
`meta["val"]` finds no node to rewrite), so a campaign would check nothing.

`hand_over(gm, function)` prepares a GraphModule that `passcheck export-python` wrote
(tensor_meta and passcheck's metadata on every node) as the pass's caller would hand it,
and returns the context manager to run the pass in. `caller(kind)` marks a pass function
with the caller it expects:

| kind | what the pass is handed |
|---|---|
| `fx` (default) | `meta["val"]` FakeTensors of one fake mode (propagated through the graph, so views share their base's storage as in a traced graph), `tensor_meta`, `seq_nr`, `nn_module_stack`, `custom`, `stack_trace` |
| `graph_trainer` | the same (graph_trainer's passes take the GraphModule and example inputs; wrappers pass `example_inputs(gm)`) |
| `inductor-joint-graph` | the same, run inside a `TracingContext` of that fake mode and with `V.fake_mode` set, as `compile_fx`'s partition function runs `joint_graph_passes` |
| `inductor-post-grad` | the same context, as `compile_fx` runs `post_grad_passes` |

Inductor's passes are handed functional graphs only (input mutations as `copy_` at the
end, as AOTAutograd leaves them): a case that writes in place elsewhere raises
NotHandedOver, and the case is left alone rather than blamed on the pass.
| `partitioner` | set by `passcheck_fx.partitioner` (partition.py) |

A pass may also declare what it needs beyond that (`requires=`); the bridge refuses,
before any case, a pass whose needs it cannot meet, naming them (the worker's exit 2).
"""
import contextlib
import operator

import torch
import torch.fx

KINDS = ("fx", "graph_trainer", "inductor-joint-graph", "inductor-post-grad", "partitioner")

# What a pass may require, and whether the bridge provides it here.
_PROVIDED = {
    "fake_mode": "meta['val'] FakeTensors from one FakeTensorMode",
    "tracing_context": "a torch._guards.TracingContext of the graph's fake mode (inductor kinds)",
}
_NOT_PROVIDED = {
    "process_group": "a process group in the worker (collective passes are not run by the bridge yet)",
    "symbolic_shapes": "symbolic sizes (the bridge hands concrete graphs; symbolic ones are not exported to Python)",
    "cuda": "a CUDA device",
}

HAND_OVER_CALLER = "caller"
HAND_OVER_BARE = "bare"


class HandOverError(Exception):
    """A pass needs something the bridge cannot give it (bad input: the worker's exit 2)."""


class NotHandedOver(Exception):
    """This case is not one the pass's caller would hand it (an inductor pass is handed
    functional graphs only): the case is left alone and says why, not blamed on the pass
    (the worker's exit 7)."""


def _in_place_writes(gm):
    """The nodes that write an argument in place, copy_ excepted (the input-mutation
    epilogue AOTAutograd leaves in a functional graph)."""
    out = []
    for node in gm.graph.nodes:
        schema = getattr(node.target, "_schema", None)
        if node.op != "call_function" or schema is None or node.target is torch.ops.aten.copy_.default:
            continue
        if any(a.alias_info is not None and a.alias_info.is_write for a in schema.arguments):
            out.append(node)
    return out


def caller(kind, requires=()):
    """Marks a pass function with the caller it expects (one of KINDS) and what it needs
    beyond what that caller gives (names of _PROVIDED / _NOT_PROVIDED)."""
    if kind not in KINDS:
        raise ValueError("passcheck_fx.caller: unknown kind '%s' (known: %s)" % (kind, ", ".join(KINDS)))

    def mark(function):
        function.passcheck_caller = kind
        function.passcheck_requires = tuple(requires)
        return function

    return mark


def caller_kind(function):
    """The kind of caller `function` expects: its mark, `partitioner` for a partitioner."""
    if getattr(function, "passcheck_partitioner", False):
        return "partitioner"
    return getattr(function, "passcheck_caller", "fx")


def check_can_hand_over(function):
    """Raises HandOverError naming what `function` requires that the bridge cannot give."""
    kind = caller_kind(function)
    if kind not in KINDS:
        raise HandOverError("the pass is marked for caller '%s', which passcheck does not know (known: %s)"
                            % (kind, ", ".join(KINDS)))
    missing = []
    for need in getattr(function, "passcheck_requires", ()):
        if need in _PROVIDED:
            continue
        if need == "cuda" and torch.cuda.is_available():
            continue
        missing.append("%s (%s)" % (need, _NOT_PROVIDED.get(need, "unknown requirement")))
    if missing:
        raise HandOverError("the pass requires what the bridge cannot give here: " + "; ".join(missing))
    if kind.startswith("inductor-"):
        try:
            import torch._inductor.virtualized  # noqa: F401
            import torch._guards  # noqa: F401
        except Exception as error:  # noqa: BLE001
            raise HandOverError("an inductor pass needs torch._inductor, which this torch cannot import: %s" % error)


# ---- meta["val"] ----------------------------------------------------------------------

def _device_of(node):
    device = node.meta.get("passcheck_device")
    return torch.device(device) if device is not None else torch.device("cpu")


def _fake_from_tensor_meta(meta, device, mode):
    with mode:
        return torch.empty_strided(tuple(meta.shape), tuple(meta.stride), dtype=meta.dtype, device=device)


def _agrees(fake, meta):
    return (isinstance(fake, torch.Tensor) and hasattr(meta, "dtype") and tuple(fake.shape) == tuple(meta.shape)
            and tuple(fake.stride()) == tuple(meta.stride) and fake.dtype == meta.dtype)


def add_fake_values(gm):
    """Sets node.meta["val"] on every value as a traced graph carries it: FakeTensors of
    one FakeTensorMode, propagated through the graph from fake inputs (so a view's value
    shares its base's fake storage, and random and in-place operators run their fake
    kernels). A node whose propagated value disagrees with the tensor_meta passcheck
    recorded (or that the propagation could not reach) gets a FakeTensor made from its
    tensor_meta instead, so the types a pass sees are passcheck's. Returns the mode."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.passes.fake_tensor_prop import FakeTensorProp
    mode = FakeTensorMode(allow_non_fake_inputs=False)
    inputs = []
    for node in gm.graph.nodes:
        if node.op != "placeholder":
            continue
        meta = node.meta.get("tensor_meta")
        inputs.append(_fake_from_tensor_meta(meta, _device_of(node), mode) if hasattr(meta, "dtype") else None)
    for node in gm.graph.nodes:
        node.meta.pop("val", None)
    try:
        FakeTensorProp(gm, mode).propagate_dont_convert_inputs(*inputs)
    except Exception:  # noqa: BLE001  an operator without a fake kernel: the values from tensor_meta below
        pass
    for node in gm.graph.nodes:
        if node.op == "output":
            node.meta.pop("val", None)
            continue
        meta = node.meta.get("tensor_meta")
        if isinstance(meta, tuple) and not hasattr(meta, "dtype"):
            val = node.meta.get("val")
            if not (isinstance(val, (tuple, list)) and len(val) == len(meta)
                    and all(m is None or _agrees(v, m) for v, m in zip(val, meta))):
                node.meta["val"] = tuple(None if m is None else _fake_from_tensor_meta(m, _device_of(node), mode)
                                         for m in meta)
            continue
        if not hasattr(meta, "dtype"):
            continue
        if not _agrees(node.meta.get("val"), meta):
            node.meta["val"] = _fake_from_tensor_meta(meta, _device_of(node), mode)
    return mode


def add_stack_traces(gm):
    """A `stack_trace` on every call, as make_fx records one: where the node is in the
    graph (passcheck's graphs have no Python source of their own)."""
    for line, node in enumerate(gm.graph.nodes, start=1):
        if node.op == "call_function" and node.target is not operator.getitem and "stack_trace" not in node.meta:
            name = node.meta.get("passcheck_name", node.name)
            node.meta["stack_trace"] = '  File "<passcheck graph>", line %d, in forward\n    %s = %s\n' % (
                line, name, getattr(node.target, "__name__", str(node.target)))


# ---- the context ------------------------------------------------------------------------

@contextlib.contextmanager
def _inductor_context(mode):
    from torch._guards import TracingContext, tracing
    from torch._inductor.virtualized import V
    with tracing(TracingContext(mode)), V.set_fake_mode(mode):
        yield


def hand_over(gm, function, how=HAND_OVER_CALLER):
    """Prepares `gm` as `function`'s caller would hand it and returns the context manager
    to run it in. `how` "bare" hands the graph as passcheck wrote it (tensor_meta only,
    no context): what the bridge handed before it knew the callers."""
    if how == HAND_OVER_BARE:
        return contextlib.nullcontext()
    if how != HAND_OVER_CALLER:
        raise HandOverError("unknown hand-over '%s' (expected %s or %s)" % (how, HAND_OVER_CALLER, HAND_OVER_BARE))
    if caller_kind(function).startswith("inductor-"):
        writes = _in_place_writes(gm)
        if writes:
            raise NotHandedOver("inductor's passes are handed functional graphs (input mutations as copy_ at the "
                                "end); this case writes in place at %s" % ", ".join(n.name for n in writes[:3]))
    mode = add_fake_values(gm)
    add_stack_traces(gm)
    if caller_kind(function).startswith("inductor-"):
        return _inductor_context(mode)
    return contextlib.nullcontext()


def warm_up(function):
    """Runs what hand_over runs once on a small graph, so a fork server's cases find the
    fake-tensor machinery (and, for an inductor pass, inductor's context) imported and
    initialized: the first FakeTensorProp of a process costs about 1.7 s of lazy
    imports, every later one a few ms."""
    from torch.fx.passes.shape_prop import ShapeProp
    g = torch.fx.Graph()
    x = g.placeholder("x")
    y = g.call_function(torch.ops.aten.mm.default, (x, x))
    z = g.call_function(torch.ops.aten.view.default, (y, [-1]))
    w = g.call_function(torch.ops.aten.add_.Tensor, (z, 1))
    g.output((w,))
    gm = torch.fx.GraphModule(torch.nn.Module(), g)
    ShapeProp(gm).propagate(torch.zeros(2, 2))
    with hand_over(gm, function):
        pass


def example_inputs(gm):
    """The graph's inputs as FakeTensors (its placeholders' meta["val"]): the
    `example_inputs` graph_trainer's passes take."""
    return [n.meta.get("val") for n in gm.graph.nodes if n.op == "placeholder"]
