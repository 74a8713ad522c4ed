"""A minimal exporter of the GraphModules `passcheck export-python` builds, for the
pass-worker tests (suites/python_pass) while they run without the fx bridge's
passcheck_fx.export_graph. It reads back exactly what the writer records in node.meta
(passcheck_type, passcheck_name, passcheck), so it handles nodes a pass kept, moved,
retargeted to another overload of the same shape, or erased; a node a pass created
without that metadata is refused (shape propagation is the real exporter's job).
"""
import math
import operator

import torch


def _quote(s):
    out = '"'
    for ch in s:
        if ch in '"\\':
            out += "\\" + ch
        elif ch == "\n":
            out += "\\n"
        elif ch == "\t":
            out += "\\t"
        else:
            out += ch
    return out + '"'


def _float(v):
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    text = repr(v)
    return text if ("." in text or "e" in text) else text + ".0"


def _arg(a, names):
    if a is None:
        return "None"
    if isinstance(a, torch.fx.Node):
        return "%" + names[a]
    if isinstance(a, bool):
        return "True" if a else "False"
    if isinstance(a, int):
        return str(a)
    if isinstance(a, float):
        return _float(a)
    if isinstance(a, str):
        return _quote(a)
    if isinstance(a, (torch.dtype, torch.layout, torch.memory_format)):
        return str(a)
    if isinstance(a, torch.device):
        return "device(%s)" % _quote(str(a))
    if isinstance(a, (list, tuple)):
        return "[" + ", ".join(_arg(x, names) for x in a) + "]"
    raise ValueError("cannot export argument %r" % (a,))


def _meta(pc):
    parts = []
    if pc.get("phase", "forward") != "forward":
        parts.append("phase=" + pc["phase"])
    if "fqn" in pc:
        parts.append("fqn=" + _quote(pc["fqn"]))
    if "seq" in pc:
        parts.append("seq=%d" % pc["seq"])
    if "recompute" in pc:
        parts.append("recompute=" + pc["recompute"])
    if "ac_region" in pc:
        parts.append("ac_region=%d" % pc["ac_region"])
    if pc.get("custom"):
        parts.append("custom={" + ", ".join("%s: %s" % (_quote(k), _quote(v)) for k, v in sorted(pc["custom"].items())) + "}")
    return ("  #{" + ", ".join(parts) + "}") if parts else ""


def _type(node):
    if "passcheck_type" not in node.meta:
        raise ValueError("node %s has no passcheck_type (the stand-in exporter does not propagate shapes)" % node.name)
    return node.meta["passcheck_type"]


def export_graph(gm, kinds=None):
    kinds = kinds or {}
    names = {}
    inputs, lines, outputs = [], [], []
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            name = node.meta.get("passcheck_name", node.target)
            names[node] = name
            kind = kinds.get(node.name, kinds.get(node.target, node.meta.get("passcheck_kind", "arg")))
            inputs.append("    %s %%%s : %s" % (kind, name, _type(node)))
        elif node.op == "call_function" and node.target is operator.getitem:
            names[node] = node.meta.get("passcheck_name", node.name)
        elif node.op == "call_function":
            schema = node.target._schema
            op = schema.name + ("." + schema.overload_name if schema.overload_name else "")
            values = list(node.args)
            for arg in schema.arguments[len(node.args):]:
                if arg.name not in node.kwargs:
                    break
                values.append(node.kwargs[arg.name])
            if "passcheck_names" in node.meta:
                items = {u.args[1]: u for u in node.users if u.target is operator.getitem}
                outs = []
                for i, out_name in enumerate(node.meta["passcheck_names"]):
                    item = items.get(i)
                    if item is not None:
                        names[item] = item.meta.get("passcheck_name", item.name)
                        outs.append("%%%s : %s" % (names[item], _type(item)))
                    else:
                        outs.append("%%%s : %s" % (out_name, node.meta["passcheck_types"][i]))
                pending = (node, op, values, outs)
            else:
                names[node] = node.meta.get("passcheck_name", node.name)
                outs = ["%%%s : %s" % (names[node], _type(node))] if "passcheck_type" in node.meta else []
                pending = (node, op, values, outs)
            lines.append(pending)
        elif node.op == "output":
            result = node.args[0]
            outputs = list(result) if isinstance(result, (list, tuple)) else [result]
        else:
            raise ValueError("node %s: %s nodes are not exported" % (node.name, node.op))
    text = "graph(\n" + ",\n".join(inputs) + "):\n"
    for node, op, values, outs in lines:
        lhs = ", ".join(outs) if outs else "()"
        text += "  %s = %s(%s)%s\n" % (lhs, op, ", ".join(_arg(v, names) for v in values),
                                        _meta(node.meta.get("passcheck", {})))
    text += "  return (" + ", ".join("%" + names[o] for o in outputs) + ")\n"
    return text
