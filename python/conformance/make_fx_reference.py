#!/usr/bin/python3
"""Writes the make_fx reference for passcheck's tracer conformance suite.

Reads suites/conformance/corpus.txt (the shared corpus of training steps), traces each
program with PyTorch's own make_fx (Debian's python3-torch, the same 1.13 kernels as
passcheck's CPU build), and writes one section per program: every operator node of the
joint graph with the dtype and shape of each tensor it returns. A program make_fx refuses
(a data-dependent decision) is written as "! refused: data-dependent". The C++ test
(suites/conformance/conformance_test.cpp) traces the same programs with passcheck's tracer
and compares after the normalisation listed in docs/tracer-conformance.md.

  make_fx_reference.py [--corpus FILE] [--out FILE]   regenerate the golden file
  make_fx_reference.py --check                        exit 1 if the golden file is stale
"""
import argparse
import operator
import os
import re
import sys

import torch
from torch.fx.experimental.proxy_tensor import make_fx
from torch.fx.passes.shape_prop import ShapeProp

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DEFAULT_CORPUS = os.path.join(ROOT, "suites", "conformance", "corpus.txt")
DEFAULT_GOLDEN = os.path.join(ROOT, "suites", "conformance", "make_fx.golden")

DTYPES = {"u8": torch.uint8, "i8": torch.int8, "i16": torch.int16, "i32": torch.int32, "i64": torch.int64,
          "f16": torch.float16, "f32": torch.float32, "f64": torch.float64, "b8": torch.bool,
          "bf16": torch.bfloat16}
DTYPE_NAMES = {v: k for k, v in DTYPES.items()}


class CorpusError(Exception):
    pass


# ---- corpus parsing (the format is described at the top of corpus.txt) ----------------

def parse_args(text, where):
    """Splits 'a, [b, c], "s"' into Python values; %names stay as ('ref', name)."""
    pos = 0

    def skip():
        nonlocal pos
        while pos < len(text) and text[pos] == " ":
            pos += 1

    def value():
        nonlocal pos
        skip()
        if text[pos] == "[":
            pos += 1
            items = []
            skip()
            if text[pos] == "]":
                pos += 1
                return items
            while True:
                items.append(value())
                skip()
                if text[pos] == "]":
                    pos += 1
                    return items
                if text[pos] != ",":
                    raise CorpusError(f"{where}: expected ',' or ']' at column {pos + 1}")
                pos += 1
        if text[pos] == '"':
            end = text.index('"', pos + 1)
            s = text[pos + 1:end]
            pos = end + 1
            return s
        m = re.compile(r"[%A-Za-z0-9_.+\-]+").match(text, pos)
        if not m:
            raise CorpusError(f"{where}: unexpected character at column {pos + 1}")
        pos = m.end()
        tok = m.group(0)
        if tok.startswith("%"):
            return ("ref", tok[1:])
        if tok in ("true", "false"):
            return tok == "true"
        if tok == "None":
            return None
        if tok in DTYPES:
            return DTYPES[tok]
        if tok == "dev":  # the device the step runs on
            return torch.device("cpu")
        if tok in ("inf", "-inf", "nan"):
            return float(tok)
        if re.fullmatch(r"-?\d+", tok):
            return int(tok)
        try:
            return float(tok)
        except ValueError:
            raise CorpusError(f"{where}: cannot read '{tok}'")

    out = []
    skip()
    if pos == len(text):
        return out
    while True:
        out.append(value())
        skip()
        if pos == len(text):
            return out
        if text[pos] != ",":
            raise CorpusError(f"{where}: expected ',' at column {pos + 1}")
        pos += 1


def parse_corpus(path):
    programs = []
    current = None
    with open(path) as f:
        for lineno, raw in enumerate(f, 1):
            line = raw.split("#", 1)[0].rstrip() if not raw.lstrip().startswith("%") else raw.rstrip()
            where = f"{path}:{lineno}"
            words = line.split()
            if not words:
                continue
            if words[0] == "program":
                current = {"name": words[1], "inputs": [], "ops": [], "outputs": [], "line": lineno}
                programs.append(current)
            elif current is None:
                raise CorpusError(f"{where}: a line outside a program")
            elif words[0] == "input":
                m = re.fullmatch(r"(\w+)\[([\d,]*)\]", words[2])
                if not m or m.group(1) not in DTYPES:
                    raise CorpusError(f"{where}: bad input type '{words[2]}'")
                sizes = [int(s) for s in m.group(2).split(",") if s]
                flags = words[3:]
                high = next((int(w[5:]) for w in flags if w.startswith("high=")), 2)
                current["inputs"].append({"name": words[1], "dtype": DTYPES[m.group(1)], "sizes": sizes,
                                          "grad": "grad" in flags, "high": high})
            elif words[0] == "output":
                current["outputs"] = [w.lstrip("%") for w in words[1:]]
            else:
                nograd = words[0] == "nograd"
                body = line.strip()[len("nograd"):].strip() if nograd else line.strip()
                m = re.fullmatch(r"(.+?)=\s*([\w:]+)(?:\.(\w+))?\((.*)\)", body)
                if not m:
                    raise CorpusError(f"{where}: cannot read operation line")
                outs = [o.strip().lstrip("%") for o in m.group(1).split(",")]
                current["ops"].append({"outs": outs, "op": m.group(2), "overload": m.group(3) or "default",
                                       "args": parse_args(m.group(4), where), "nograd": nograd, "where": where})
    return programs


# ---- the training step -----------------------------------------------------------------

def example_inputs(program):
    """Integer inputs are arange % high and bool inputs arange % 3 == 0, as in the C++ test,
    so data-dependent shapes (masked_select) agree; float values do not matter here."""
    gen = torch.Generator().manual_seed(0)
    out = []
    for spec in program["inputs"]:
        n = 1
        for s in spec["sizes"]:
            n *= s
        if spec["dtype"].is_floating_point:
            t = torch.randn(spec["sizes"], generator=gen).to(spec["dtype"])
        elif spec["dtype"] == torch.bool:
            t = (torch.arange(n) % 3 == 0).reshape(spec["sizes"])
        else:
            t = (torch.arange(n) % spec["high"]).to(spec["dtype"]).reshape(spec["sizes"])
        out.append(t.requires_grad_(spec["grad"]))
    return out


def resolve(value, env):
    if isinstance(value, tuple) and value[0] == "ref":
        return env[value[1]]
    if isinstance(value, list):
        return [resolve(v, env) for v in value]
    return value


def call(op, env):
    namespace, name = op["op"].split("::")
    overload = getattr(getattr(getattr(torch.ops, namespace), name), op["overload"])
    schema = overload._schema
    args, kwargs = [], {}
    if len(op["args"]) > len(schema.arguments):
        raise CorpusError(f"{op['where']}: {len(op['args'])} arguments for {schema}")
    for value, arg in zip(op["args"], schema.arguments):
        if arg.kwarg_only:
            kwargs[arg.name] = resolve(value, env)
        else:
            args.append(resolve(value, env))
    result = overload(*args, **kwargs)
    results = list(result) if isinstance(result, (tuple, list)) else [result]
    if len(results) != len(op["outs"]):
        raise CorpusError(f"{op['where']}: {len(results)} results, {len(op['outs'])} names")
    env.update(zip(op["outs"], results))


def make_step(program):
    names = [i["name"] for i in program["inputs"]]

    def step(*inputs):
        env = dict(zip(names, inputs))
        for op in program["ops"]:
            if op["nograd"]:
                with torch.no_grad():
                    call(op, env)
            else:
                call(op, env)
        loss = None
        for name in program["outputs"]:
            t = env[name]
            if t.is_floating_point():
                loss = t.sum() if loss is None else loss + t.sum()
        wrt = [env[i["name"]] for i in program["inputs"] if i["grad"]]
        return [loss, *torch.autograd.grad(loss, wrt)]

    return step


# ---- golden text -----------------------------------------------------------------------

def describe(meta):
    # TensorMetadata is a NamedTuple: test for it before plain tuples of results.
    if hasattr(meta, "dtype") and hasattr(meta, "shape"):
        return f"{DTYPE_NAMES[meta.dtype]}[{','.join(str(s) for s in meta.shape)}]"
    if isinstance(meta, (list, tuple)):
        return " ".join(describe(m) for m in meta)
    return "-"


def reference(program):
    inputs = example_inputs(program)
    gm = make_fx(make_step(program))(*inputs)
    ShapeProp(gm).propagate(*[t.detach().requires_grad_(t.requires_grad) for t in example_inputs(program)])
    lines = []
    for node in gm.graph.nodes:
        if node.op != "call_function" or node.target is operator.getitem:
            continue
        schema = node.target._schema
        op = schema.name + ("" if schema.overload_name == "" else "." + schema.overload_name)
        line = f"{op} {describe(node.meta.get('tensor_meta'))}".rstrip()
        # An in-place update of a temporary (not of a graph input), which passcheck's
        # tracer records in functional form: marked so the comparison can tell it from a
        # program's update of an input.
        first = schema.arguments[0] if schema.arguments else None
        written = first is not None and first.alias_info is not None and first.alias_info.is_write
        if written and node.args and isinstance(node.args[0], torch.fx.Node) and node.args[0].op != "placeholder":
            line += " @temporary"
        lines.append(line)
    return lines


def golden_text(programs):
    out = ["# Generated by python/conformance/make_fx_reference.py from suites/conformance/corpus.txt",
           f"# with torch {torch.__version__}: make_fx of each training step, one operator node a line",
           "# with the dtype and shape of each tensor it returns; an in-place update of a temporary",
           "# (not a graph input) is marked @temporary. Do not edit by hand."]
    for program in programs:
        out.append(f"== {program['name']}")
        try:
            out.extend(reference(program))
        except RuntimeError as e:
            # make_fx refuses a step whose trace would depend on tensor data; passcheck's
            # tracer must refuse it too.
            if "data-dependent" not in str(e) and "value out of a tracing tensor" not in str(e):
                raise CorpusError(f"corpus line {program['line']}: make_fx failed on {program['name']}: {e}")
            out.append("! refused: data-dependent")
    return "\n".join(out) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", default=DEFAULT_CORPUS)
    parser.add_argument("--out", default=DEFAULT_GOLDEN)
    parser.add_argument("--check", action="store_true", help="compare with --out instead of writing it")
    args = parser.parse_args()
    try:
        programs = parse_corpus(args.corpus)
        text = golden_text(programs)
    except (CorpusError, OSError) as e:
        print(f"make_fx_reference: {e}", file=sys.stderr)
        return 2
    if args.check:
        try:
            with open(args.out) as f:
                current = f.read()
        except OSError as e:
            print(f"make_fx_reference: {e}", file=sys.stderr)
            return 2
        if current != text:
            print(f"make_fx_reference: {args.out} is stale; regenerate it with python/conformance/make_fx_reference.py",
                  file=sys.stderr)
            return 1
        print(f"make_fx_reference: {len(programs)} programs, {args.out} up to date")
        return 0
    with open(args.out, "w") as f:
        f.write(text)
    print(f"make_fx_reference: {len(programs)} programs written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
