// The Python writer (python_writer.h). The file it writes imports only torch and the
// standard library, so Debian's torch 1.13 and PyTorch 2.x both run it. Arguments keep
// the schema's order; kwarg-only ones are passed by name, which Python's operator
// binding requires and the executor's positional list does not. A node with several
// outputs (or a Tensor[] return) becomes the call plus one operator.getitem per output,
// which is how make_fx and AOTAutograd graphs spell them.
#include "workflows/python_bridge/python_writer.h"

#include "framework/exec/schema_args.h"
#include "framework/ir/text.h"

#include <cstdio>
#include <sstream>

namespace passcheck::python_bridge {

namespace {

// A Python string literal: ASCII only, everything else escaped, so the file's encoding
// never matters.
std::string py_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char ch : s) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += static_cast<char>(ch);
    } else if (ch >= 0x20 && ch < 0x7f) {
      out += static_cast<char>(ch);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", ch);
      out += buf;
    }
  }
  return out + "\"";
}

std::string node_label(const ir::Node& node) {
  std::string label = node.num_outputs() > 0 ? "%" + node.output(0)->name() : "the node";
  label += " (" + node.op();
  if (node.source_line > 0) label += ", line " + std::to_string(node.source_line);
  return label + ")";
}

std::string py_float(double v) {
  std::string text = ir::format_double(v);
  if (text == "inf") return "math.inf";
  if (text == "-inf") return "-math.inf";
  if (text == "nan" || text == "-nan") return "math.nan";
  return text;
}

std::string py_int_list(const std::vector<int64_t>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + std::to_string(values[i]);
  return out + "]";
}

std::string py_arg(const ir::Arg& arg, const std::string& where) {
  using K = ir::Arg::Kind;
  switch (arg.kind) {
    case K::None: return "None";
    case K::Bool: return arg.b ? "True" : "False";
    case K::Int: return std::to_string(arg.i);
    case K::Float: return py_float(arg.f);
    case K::String: return py_string(arg.str());
    case K::Device: return "torch.device(" + py_string(arg.device.str()) + ")";
    case K::Dtype:
    case K::Layout:
    case K::MemoryFormat: {
      std::string text = ir::print_arg(arg);  // "torch.float32", "torch.strided", ...
      if (text.find('(') != std::string::npos)
        throw PythonWriteError(where + ": constant " + text + " has no name in Python's torch");
      return text;
    }
    case K::Value: return "v[" + py_string(arg.value->name()) + "]";
    case K::List: {
      std::string out = "[";
      for (size_t i = 0; i < arg.list().size(); ++i) out += (i ? ", " : "") + py_arg(arg.list()[i], where);
      return out + "]";
    }
    case K::Sym:
      throw PythonWriteError(where + ": symbolic argument " + ir::print_arg(arg) +
                             " (run the concretize pass first: Python graphs have concrete shapes)");
  }
  throw PythonWriteError(where + ": argument of unknown kind");
}

// "_tm([4, 8], [8, 1], torch.float32)" or "None" for a non-tensor value.
std::string py_tensor_meta(const ir::Value& value, const std::string& where) {
  if (value.type() != ir::ValueType::Tensor || !value.meta()) return "None";
  const ir::TensorMeta& m = *value.meta();
  if (m.is_symbolic())
    throw PythonWriteError(where + ": %" + value.name() + " has a symbolic shape (run the concretize pass first)");
  ir::Arg dtype = ir::Arg::dtype(m.dtype);
  return "_tm(" + py_int_list(m.sizes) + ", " + py_int_list(m.strides) + ", " + py_arg(dtype, where) + ", " +
         py_string(m.device.str()) + ")";
}

// The node's passcheck metadata as a Python dict literal (only what differs from the
// defaults, as the text format prints it).
std::string py_node_meta(const ir::NodeMeta& meta, const std::string& where) {
  std::vector<std::string> items;
  items.push_back("\"phase\": " + py_string(ir::to_string(meta.phase)));
  if (!meta.module_fqn.empty()) items.push_back("\"fqn\": " + py_string(meta.module_fqn));
  if (meta.seq_nr >= 0) items.push_back("\"seq\": " + std::to_string(meta.seq_nr));
  if (meta.recompute != ir::RecomputePolicy::Unset)
    items.push_back("\"recompute\": " + py_string(ir::to_string(meta.recompute)));
  if (meta.ac_region_id) items.push_back("\"ac_region\": " + std::to_string(*meta.ac_region_id));
  if (!meta.custom.empty()) {
    std::string custom = "{";
    bool first = true;
    for (const auto& [k, v] : meta.custom) {
      custom += (first ? "" : ", ") + py_string(k) + ": " + py_string(v);
      first = false;
    }
    items.push_back("\"custom\": " + custom + "}");
  }
  if (!meta.wanted_placements.empty())
    throw PythonWriteError(where + ": wanted placements (distributed graphs have no Python form)");
  std::string out = "{";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
  return out + "}";
}

std::string py_outputs(const ir::Node& node, const std::string& where) {
  std::string names = "[", types = "[", metas = "[";
  for (size_t i = 0; i < node.num_outputs(); ++i) {
    const ir::Value& out = *node.output(i);
    names += (i ? ", " : "") + py_string(out.name());
    types += (i ? ", " : "") + py_string(ir::print_type(out));
    metas += (i ? ", " : "") + py_tensor_meta(out, where);
  }
  return names + "], " + types + "], " + metas + "]";
}

const char* kRole[] = {"param", "buffer", "arg"};

const char* kPrelude = R"PY(import keyword
import math
import operator
import re

import torch
import torch.fx
from torch.fx.passes.shape_prop import TensorMetadata

try:  # PyTorch 2.4 and later
    from torch.utils.checkpoint import CheckpointPolicy as _CheckpointPolicy
except ImportError:
    _CheckpointPolicy = None


def _tm(shape, stride, dtype, device):
    # ShapeProp's record of a tensor; the device, which it lacks, goes beside it.
    contiguous, expected = True, 1
    for size, step in reversed(list(zip(shape, stride))):
        if size != 1 and step != expected:
            contiguous = False
        expected *= size
    meta = TensorMetadata(shape=torch.Size(shape), dtype=dtype, requires_grad=False, stride=tuple(stride),
                          memory_format=torch.contiguous_format if contiguous else None, is_quantized=False,
                          qparams={})
    return meta, device


def _op(namespace, name, overload):
    packet = getattr(getattr(torch.ops, namespace), name)
    return getattr(packet, overload)


def _record(node, name, type_text, tensor_meta):
    node.meta["passcheck_name"] = name
    node.meta["passcheck_type"] = type_text
    if tensor_meta is not None:
        node.meta["tensor_meta"], node.meta["passcheck_device"] = tensor_meta


def _input(g, v, name, kind, type_text, tensor_meta):
    # A placeholder's target is a parameter of forward(): an identifier. The graph's own
    # name ("fc1.weight") stays in meta["passcheck_name"].
    target = re.sub(r"\W", "_", name)
    if not target or target[0].isdigit() or keyword.iskeyword(target):
        target = "_" + target
    taken = {n.target for n in g.nodes if n.op == "placeholder"}
    base, k = target, 1
    while target in taken:
        target, k = "%s_%d" % (base, k), k + 1
    node = g.placeholder(target)
    node.meta["passcheck_kind"] = kind
    _record(node, name, type_text, tensor_meta)
    v[name] = node


def _call(g, v, target, args, kwargs, names, types, metas, passcheck_meta, spread):
    # spread: the outputs are items of the call's result (several returns, or Tensor[]).
    label = names[0] if len(names) == 1 and not spread else target.__name__.split(".")[0]
    node = g.create_node("call_function", target, tuple(args), kwargs, name=label)
    # The metadata in PyTorch's own keys, which Python passes read and write; "keys":
    # "pytorch" tells the exporter to read these fields back from there, so a pass's edit
    # (or removal) is what comes back. meta["passcheck"] keeps what PyTorch cannot spell.
    node.meta["passcheck"] = dict(passcheck_meta, keys="pytorch")
    if "seq" in passcheck_meta:
        node.meta["seq_nr"] = passcheck_meta["seq"]
    if "custom" in passcheck_meta:
        node.meta["custom"] = dict(passcheck_meta["custom"])
    if "recompute" in passcheck_meta:
        policy = passcheck_meta["recompute"].upper()
        node.meta["recompute"] = getattr(_CheckpointPolicy, policy) if _CheckpointPolicy is not None else policy
    if "ac_region" in passcheck_meta:
        node.meta["ac_graph_id"] = passcheck_meta["ac_region"]
    if "fqn" in passcheck_meta:
        node.meta["nn_module_stack"] = {passcheck_meta["fqn"]: (passcheck_meta["fqn"], torch.nn.Module)}
    if passcheck_meta["phase"] == "backward":
        node.meta["partitioner_tag"] = "is_backward"
    if not spread:
        if names:
            _record(node, names[0], types[0], metas[0])
            v[names[0]] = node
        return
    node.meta["passcheck_names"] = list(names)
    node.meta["passcheck_types"] = list(types)
    node.meta["tensor_meta"] = tuple(m[0] if m is not None else None for m in metas)
    for i, (name, type_text, tensor_meta) in enumerate(zip(names, types, metas)):
        item = g.create_node("call_function", operator.getitem, (node, i), {}, name=name)
        _record(item, name, type_text, tensor_meta)
        v[name] = item


def build():
    """The graph as a torch.fx GraphModule."""
    gm = torch.fx.GraphModule(torch.nn.Module(), build_graph(), class_name="PasscheckGraph")
    return gm

)PY";

}  // namespace

std::string write_python_graph(const ir::Graph& graph, const std::string& source) {
  if (graph.mesh())
    throw PythonWriteError(source + ": a distributed (per-rank) graph: its collectives and placements have no Python form");
  if (!graph.symbols().empty())
    throw PythonWriteError(source + ": the graph has symbols (run the concretize pass first: Python graphs have concrete "
                                    "shapes)");
  if (graph.has_subgraphs())
    throw PythonWriteError(source + ": the graph calls nested subgraphs (run the inline-subgraphs pass first: the "
                                    "Python form is one flat graph)");
  std::ostringstream out;
  out << "# Written by passcheck export-python from " << source.substr(0, source.find('\n')) << ".\n"
      << "# build() rebuilds the graph as a torch.fx GraphModule of aten operators; PASSCHECK_INPUTS lists\n"
      << "# its inputs (name, kind) in order, node.meta holds each value's passcheck type (\"passcheck_type\",\n"
      << "# \"tensor_meta\") and each node's passcheck metadata (\"passcheck\": phase, fqn, seq, recompute,\n"
      << "# ac_region, custom). docs/python-passes.md describes the file.\n"
      << kPrelude;
  out << "PASSCHECK_INPUTS = [\n";
  for (const ir::Value* in : graph.inputs())
    out << "    (" << py_string(in->name()) << ", \"" << kRole[static_cast<int>(in->role())] << "\"),\n";
  out << "]\n\n\ndef build_graph():\n    g = torch.fx.Graph()\n    v = {}\n";
  for (const ir::Value* in : graph.inputs()) {
    const std::string where = source + ": input %" + in->name();
    out << "    _input(g, v, " << py_string(in->name()) << ", \"" << kRole[static_cast<int>(in->role())] << "\", "
        << py_string(ir::print_type(*in)) << ", " << py_tensor_meta(*in, where) << ")\n";
  }
  for (const ir::Node* node : graph.nodes()) {
    const std::string where = source + ": node " + node_label(*node);
    const std::string ns = node->op().substr(0, node->op().find("::"));
    if (ns == "passcheck")
      throw PythonWriteError(where + ": " + node->op() +
                             " is passcheck's own operator; Python's torch has no such operator");
    std::optional<c10::OperatorHandle> handle = exec::find_operator(node->op());
    if (!handle) throw PythonWriteError(where + ": unknown operator " + node->op());
    const c10::FunctionSchema& schema = handle->schema();
    const auto& schema_args = schema.arguments();
    if (node->num_args() > schema_args.size())
      throw PythonWriteError(where + ": " + std::to_string(node->num_args()) + " arguments, the schema takes " +
                             std::to_string(schema_args.size()));
    std::string args = "[", kwargs = "{";
    bool first_arg = true, first_kwarg = true;
    for (size_t i = 0; i < node->num_args(); ++i) {
      std::string text = py_arg(node->arg(i), where + " argument '" + schema_args[i].name() + "'");
      if (schema_args[i].kwarg_only()) {
        kwargs += (first_kwarg ? "" : ", ") + py_string(schema_args[i].name()) + ": " + text;
        first_kwarg = false;
      } else {
        args += (first_arg ? "" : ", ") + text;
        first_arg = false;
      }
    }
    const auto& returns = schema.returns();
    const bool spread = returns.size() > 1 ||
                        (returns.size() == 1 && returns[0].type()->kind() == c10::TypeKind::ListType);
    std::string overload = node->overload().empty() ? "default" : node->overload();
    out << "    _call(g, v, _op(" << py_string(ns) << ", " << py_string(node->op_base()) << ", " << py_string(overload)
        << "), " << args << "], " << kwargs << "}, " << py_outputs(*node, where) << ", "
        << py_node_meta(node->meta(), where) << ", " << (spread ? "True" : "False") << ")\n";
  }
  out << "    g.output((";
  for (size_t i = 0; i < graph.outputs().size(); ++i)
    out << (i ? ", " : "") << "v[" << py_string(graph.outputs()[i]->name()) << "]";
  out << (graph.outputs().size() == 1 ? ",))\n" : "))\n");
  out << "    return g\n";
  return out.str();
}

}  // namespace passcheck::python_bridge
