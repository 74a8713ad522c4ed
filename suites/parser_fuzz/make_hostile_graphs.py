#!/usr/bin/env python3
"""Writes hostile but well-formed-looking graph files that stress the size limits of the
graph text parser (docs/graph-format.md, "Limits"): a huge rank, many nodes, long names,
deeply nested list arguments, one very long line. Used to measure that parsing, verifying
and planning stay linear or stop early with a clear error (docs/parser-fuzzing.md).

usage: make_hostile_graphs.py OUT_DIR [--scale N]
"""
import argparse
import os


def rank(n):
    dims = ", ".join(["1"] * n)
    return f"graph(\n    arg %x : f32[{dims}]):\n  %y : f32[{dims}] = aten::relu(%x)\n  return (%y)\n"


def nodes(n):
    lines = ["graph(\n    arg %x : f32[2]):"]
    prev = "x"
    for i in range(n):
        lines.append(f"  %v{i} : f32[2] = aten::relu(%{prev})")
        prev = f"v{i}"
    lines.append(f"  return (%{prev})")
    return "\n".join(lines) + "\n"


def long_name(n):
    name = "n" * n
    return f"graph(\n    arg %{name} : f32[2]):\n  %y : f32[2] = aten::relu(%{name})\n  return (%y)\n"


def nesting(n):
    return f"graph(\n    arg %x : f32[2]):\n  %y : f32[2] = aten::relu(%x, {'[' * n}{']' * n})\n  return (%y)\n"


def long_line(n):
    args = ", ".join(["[1, 2]"] * n)
    return f"graph(\n    arg %x : f32[2]):\n  %y : f32[2] = aten::relu(%x, [{args}])\n  return (%y)\n"


def many_inputs(n):
    ins = ",\n    ".join(f"arg %a{i} : f32[2]" for i in range(n))
    return f"graph(\n    {ins}):\n  %y : f32[2] = aten::relu(%a0)\n  return (%y)\n"


def many_outputs(n):
    outs = ", ".join(["%x"] * n)
    return f"graph(\n    arg %x : f32[2]):\n  return ({outs})\n"


def long_comment(n):
    return "#" + "c" * n + "\n" + nodes(1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--scale", type=int, default=1)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    s = args.scale
    cases = {
        "rank_50k": rank(50_000 * s),
        "rank_200k": rank(200_000 * s),
        "nodes_200k": nodes(200_000 * s),
        "name_10m": long_name(10_000_000 * s),
        "nesting_1m": nesting(1_000_000 * s),
        "line_1m_lists": long_line(1_000_000 * s),
        "inputs_100k": many_inputs(100_000 * s),
        "outputs_1m": many_outputs(1_000_000 * s),
        "comment_50m": long_comment(50_000_000 * s),
    }
    for name, text in cases.items():
        with open(os.path.join(args.out, name + ".graph"), "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
