"""passcheck_fx: the bridge from torch.fx to passcheck (docs/verifying-a-python-pass.md).

export_graph turns a GraphModule of aten ops into passcheck graph text; dump writes it to
a file (the two lines a pass author adds around a pass); save_inputs writes the inputs a
graph runs on as a torch.save archive that `passcheck run --inputs` and `passcheck equiv
--inputs` read with LibTorch's pickle loader; load_outputs reads back what `passcheck
run --save-outputs` wrote.
"""
import torch

from .exporter import ExportError, export_graph, export_partitioned, format_constant, lifted_constants, placeholder_kinds
from .callers import HandOverError, caller, example_inputs, hand_over
from .partition import PartitionedModule, partition_joint, partition_passcheck_joint, partitioner

__all__ = ["ExportError", "export_graph", "export_partitioned", "format_constant", "lifted_constants", "placeholder_kinds", "dump", "dump_partitioned",
           "PartitionedModule", "partition_joint", "partition_passcheck_joint", "partitioner",
           "save_inputs", "load_outputs", "bitwise_equal", "HandOverError", "caller", "example_inputs", "hand_over"]


def dump(gm, path, kinds=None, example_inputs=None):
    """Writes export_graph(gm, ...) to `path` (e.g. "before.graph" / "after.graph")."""
    text = export_graph(gm, kinds, example_inputs=example_inputs)
    with open(path, "w") as f:
        f.write(text)
    return path


def dump_partitioned(path, joint, forward, backward, num_fwd_outputs, kinds=None, example_inputs=None):
    """Writes a partitioner's forward and backward graphs as one passcheck module."""
    with open(path, "w") as f:
        f.write(export_partitioned(joint, forward, backward, num_fwd_outputs, kinds, example_inputs))
    return path


def save_inputs(path, tensors):
    """A torch.save archive of the inputs in graph-input order (tensors detached, other
    values as they are), readable by LibTorch's torch::pickle_load. The sequence is
    pickled as a tuple (passcheck accepts a list or a tuple)."""
    values = tuple(t.detach() if isinstance(t, torch.Tensor) else t for t in tensors)
    torch.save(values, path)
    return path


def load_outputs(path):
    """The list `passcheck run --save-outputs FILE` wrote. LibTorch's pickler tags typed
    lists with torch.jit._pickle.restore_type_tag, the one global such an archive names:
    it is allowed, and nothing else (torch.load's weights-only mode)."""
    import torch.jit._pickle
    with torch.serialization.safe_globals([torch.jit._pickle.restore_type_tag]):
        return list(torch.load(path, weights_only=True))


def bitwise_equal(a, b):
    """Same dtype, shape and bits (NaNs with the same payload compare equal)."""
    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
        return type(a) == type(b) and a == b
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.is_floating_point() or a.is_complex():
        view = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64, 16: torch.int64}[a.element_size()]
        a, b = a.contiguous(), b.contiguous()
        if a.is_complex():
            a, b = torch.view_as_real(a), torch.view_as_real(b)
            view = torch.int32 if a.element_size() == 4 else torch.int64
        return torch.equal(a.view(view), b.view(view))
    return torch.equal(a, b)
