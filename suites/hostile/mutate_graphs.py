#!/usr/bin/env python3
"""Hostile graph files for `passcheck run`: mutates seed graphs (the graphs of the text
pass tests in suites/passes_text/*.graph, traces of the debug models, and the extra
seeds below) and runs each mutant, flagging any outcome other than exit 0, 1 or 2 with
a clean message: a signal, a timeout, another exit code, or LibTorch's "INTERNAL ASSERT"
/ "report a bug" text reaching the user. docs/graph-format.md, "Limits and validation".

  suites/hostile/mutate_graphs.py --passcheck build/bin/passcheck --count 2000 \
      [--seed 1] [--jobs 2] [--out /tmp/hostile]

Writes every flagged mutant to --out (with its output) and prints a summary by class.
"""
import argparse
import concurrent.futures
import glob
import os
import random
import re
import subprocess
import sys
import tempfile

EXTRA_SEEDS = [
    """graph(arg %x : f32[2, 3], arg %t : i64[2]):
  %y : f32[2, 3] = aten::_to_copy(%x, 6)
  %e : f32[2, 3] = aten::empty.memory_format([2, 3], 6, 0, None, False, 0)
  %z : f32[2, 3] = aten::add.Tensor(%y, %e, 1)
  %l : f32[] = aten::mse_loss(%z, %x, 1)
  %n : f32[] = aten::nll_loss(%x, %t, None, 1, -100)
  %s : f32[3] = aten::sum.dim_IntList(%z, [0], False)
  %c : f32[4, 3] = aten::cat([%x, %z], 0)
  %v : f32[3, 2] = aten::view(%x, [3, 2])
  %p : f32[2, 3] = aten::permute(%v, [1, 0])
  %r : f32[2, 3] = aten::clone(%p, 0)
  %f : f32[2, 3] = aten::full([2, 3], 1.5, 6, None, None, False)
  %z2 : f32[2, 3] = aten::zeros([2, 3], 6, None, None, False)
  %o : f32[2, 3] = aten::ones_like(%x, 6, None, None, False, 0)
  %i : f32[2, 3] = aten::index_select(%x, 0, %t)
  %g : f32[2, 3] = aten::gelu(%x, "tanh")
  %sm : f32[2, 3] = aten::_softmax(%x, 1, False)
  %mx : f32[2], %am : i64[2] = aten::max.dim(%x, 1, False)
  %ex : f32[2, 2, 3] = aten::expand(%x, [2, 2, 3], False)
  %ar : i64[4] = aten::arange(4, 4, None, None, False)
  %rs : f32[2, 3] = aten::resize_(%r, [2, 3], None)
  return (%l, %n, %s, %c, %r, %f, %z2, %o, %i, %g, %sm, %mx, %am, %ex, %ar, %rs)
""",
]

WEIRD_INTS = ["-1", "0", "1", "3", "8", "12", "17", "18", "128", "232", "-128", "2147483648",
              "1000000000", "100000", "-1000000000000", "9223372036854775807"]
WEIRD_ARGS = ["None", "True", "1.5", "\"abc\"", "[1]", "[]", "[None]", "[1.5]", "[%x]", "torch.float32",
              "torch.dtype(232)", "torch.layout(7)", "torch.memory_format(9)", "device(\"meta\")",
              "device(\"cuda\")", "nan", "inf", "-1", "[-1, -1]", "[100000, 100000]", "[1000000000]"]
DTYPES = ["f16", "bf16", "f32", "f64", "i8", "i16", "i32", "i64", "u8", "b8", "c64", "c128"]


def graph_blocks(text):
    """Graph texts in a file: every 'graph(' up to its 'return (...)' line."""
    lines, out, cur = text.splitlines(), [], None
    header = []
    for line in lines:
        if line.startswith("symbol ") or line.startswith("claim "):
            header.append(line)
        if line.startswith("graph("):
            cur = list(header) + [line]
            header = []
            continue
        if cur is not None:
            cur.append(line)
            if line.strip().startswith("return ("):
                out.append("\n".join(cur) + "\n")
                cur = None
    return out


def seeds(passcheck, tmp):
    found = []
    for path in sorted(glob.glob(os.path.join(os.path.dirname(__file__), "..", "passes_text", "*.graph"))):
        found += graph_blocks(open(path).read())
    for model in ["two_matmul", "mlp", "dropout_mlp", "llama3"]:
        r = subprocess.run([passcheck, "trace", "--model", model], capture_output=True, text=True, timeout=120)
        if r.returncode == 0:
            found += graph_blocks(r.stdout)
    return found + EXTRA_SEEDS


def mutate(text, rng):
    lines = text.splitlines()
    node_lines = [i for i, l in enumerate(lines) if " = " in l and "::" in l]
    type_lines = [i for i, l in enumerate(lines) if re.search(r"(f16|bf16|f32|f64|i8|i16|i32|i64|u8|b8|c64|c128)\[", l)]
    kind = rng.choice(["int", "arg", "arg", "drop", "extra", "type_size", "type_dtype", "type_stride", "type_device",
                       "swap", "value"])
    if kind in ("int", "arg", "drop", "extra", "swap", "value") and node_lines:
        i = rng.choice(node_lines)
        line = lines[i]
        head, _, call = line.partition(" = ")
        m = re.match(r"([\w:.]+)\((.*)\)(\s*#\{.*)?$", call)
        if not m:
            return None, kind
        op, args, meta = m.group(1), m.group(2), m.group(3) or ""
        parts = split_args(args)
        if kind == "int":
            ints = [(k, mm) for k, p in enumerate(parts) for mm in re.finditer(r"(?<![\w%.])-?\d+(?![\w.])", p)]
            if not ints:
                return None, kind
            k, mm = rng.choice(ints)
            parts[k] = parts[k][:mm.start()] + rng.choice(WEIRD_INTS) + parts[k][mm.end():]
        elif kind == "arg":
            if not parts:
                return None, kind
            k = rng.randrange(len(parts))
            parts[k] = rng.choice(WEIRD_ARGS)
        elif kind == "drop":
            if not parts:
                return None, kind
            parts.pop()
        elif kind == "extra":
            parts.append(rng.choice(WEIRD_ARGS))
        elif kind == "swap":
            if len(parts) < 2:
                return None, kind
            a, b = rng.sample(range(len(parts)), 2)
            parts[a], parts[b] = parts[b], parts[a]
        elif kind == "value":
            names = re.findall(r"%(\w+) :", "\n".join(lines[:i + 1]))
            if not parts or not names:
                return None, kind
            k = rng.randrange(len(parts))
            parts[k] = "%" + rng.choice(names)
        lines[i] = head + " = " + op + "(" + ", ".join(parts) + ")" + meta
    elif type_lines:
        i = rng.choice(type_lines)
        line = lines[i]
        types = list(re.finditer(r"(f16|bf16|f32|f64|i8|i16|i32|i64|u8|b8|c64|c128)\[([^\]]*)\](\{[^}]*\})?", line))
        t = rng.choice(types)
        dtype, sizes, strides = t.group(1), t.group(2), t.group(3) or ""
        dims = [d.strip() for d in sizes.split(",") if d.strip()]
        if kind == "type_size":
            if dims:
                dims[rng.randrange(len(dims))] = rng.choice(["0", "1", "100000", "-1", "30000", "1000000000"])
            else:
                dims = ["7"]
            if rng.random() < 0.3:
                dims.append("2")
            strides = ""
        elif kind == "type_dtype":
            dtype = rng.choice(DTYPES)
        elif kind == "type_stride":
            strides = "{" + ", ".join(rng.choice(["0", "1", "-1", "3", "1000000000"]) for _ in dims) + "}"
        elif kind == "type_device":
            strides += rng.choice(["@cuda", "@meta", "@cuda:1"])
        new = dtype + "[" + ", ".join(dims) + "]" + strides
        lines[i] = line[:t.start()] + new + line[t.end():]
    else:
        return None, kind
    return "\n".join(lines) + "\n", kind


def split_args(args):
    parts, depth, cur, quote = [], 0, "", False
    for ch in args:
        if ch == '"' and (not cur or cur[-1] != "\\"):
            quote = not quote
        if not quote and ch in "[(":
            depth += 1
        if not quote and ch in "])":
            depth -= 1
        if ch == "," and depth == 0 and not quote:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def classify(rc, output):
    if rc == -999:
        return None
    if rc is None:
        return "timeout"
    if rc < 0:
        return "signal %d" % -rc
    if rc not in (0, 1, 2):
        return "exit %d" % rc
    if "INTERNAL ASSERT" in output or "report a bug" in output:
        return "internal assert"
    return None


def run_one(passcheck, path, extra):
    try:
        r = subprocess.run([passcheck, "run", path] + extra, capture_output=True, text=True, timeout=60)
        return r.returncode, r.stdout + r.stderr
    except subprocess.TimeoutExpired:
        return None, "timeout"
    except OSError as e:  # the binary being rebuilt under the campaign
        return -999, "could not start passcheck: %s" % e


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--passcheck", required=True)
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    tmp = tempfile.mkdtemp(prefix="hostile-")
    out = args.out or tmp
    os.makedirs(out, exist_ok=True)
    pool = seeds(args.passcheck, tmp)
    print("%d seed graphs" % len(pool), flush=True)
    cases = []
    while len(cases) < args.count:
        text, kind = mutate(rng.choice(pool), rng)
        if text is None:
            continue
        # A second mutation half of the time: kinds combine (a huge type and a wrong dtype).
        if rng.random() < 0.5:
            text2, kind2 = mutate(text, rng)
            if text2 is not None:
                text, kind = text2, kind + "+" + kind2
        path = os.path.join(tmp, "m%05d.txt" % len(cases))
        open(path, "w").write(text)
        cases.append((path, kind, ["--no-check-meta"] if rng.random() < 0.5 else []))
    counts, flagged, exits = {}, [], {}
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as ex:
        futures = {ex.submit(run_one, args.passcheck, p, extra): (p, kind, extra) for p, kind, extra in cases}
        for f in concurrent.futures.as_completed(futures):
            p, kind, extra = futures[f]
            rc, output = f.result()
            exits[rc] = exits.get(rc, 0) + 1
            cls = classify(rc, output)
            if cls:
                counts[cls] = counts.get(cls, 0) + 1
                flagged.append(p)
                dest = os.path.join(out, "flagged-" + os.path.basename(p))
                open(dest, "w").write(open(p).read() + "\n# run " + " ".join(extra) + "\n# " + cls + " (" + kind +
                                      ")\n" + "\n".join("# " + l for l in output.splitlines()[-8:]) + "\n")
    print("ran %d mutated graphs; exit codes %s" % (len(cases), dict(sorted(exits.items(), key=str))))
    for cls, n in sorted(counts.items()):
        print("  %s: %d" % (cls, n))
    print("flagged files in %s" % out if flagged else "nothing flagged")
    return 1 if flagged else 0


if __name__ == "__main__":
    sys.exit(main())
