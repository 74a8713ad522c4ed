#!/usr/bin/env python3
"""Checks that no source file includes a layer above its own.

The allowed dependencies are the ```layers block of docs/architecture.md: each line
`layer: lower layers...`; a layer may include itself, what it lists, and (transitively)
what those list. Exit 0 when every #include "..." follows the table, 1 with each
offending include named (file:line), 2 when the table itself is malformed.

Usage: check_layers.py [--root DIR]   (DIR: the source tree, this checkout by default)
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE_DIRS = ("framework", "passes", "generators", "oracles", "workflows", "tools", "suites")


def read_table(doc):
    text = open(doc, encoding="utf-8").read()
    m = re.search(r"```layers\n(.*?)```", text, re.S)
    if not m:
        sys.exit(f"{doc}: no ```layers block")
    table = {}
    for number, line in enumerate(m.group(1).splitlines(), 1):
        if not line.strip():
            continue
        if ":" not in line:
            print(f"{doc}: layers line {number}: expected `layer: lower layers`", file=sys.stderr)
            sys.exit(2)
        name, lower = line.split(":", 1)
        table[name.strip()] = lower.split()
    return table


def layer_of(path, table):
    parts = path.split("/")
    if len(parts) >= 3 and f"{parts[0]}/{parts[1]}" in table:
        return f"{parts[0]}/{parts[1]}"
    if len(parts) >= 3 and f"{parts[0]}/*" in table:
        return f"{parts[0]}/*:{parts[1]}"
    return parts[0] if parts[0] in table else None


def allowed_closure(layer, table):
    """Every layer `layer` may include (itself included)."""
    def entry(name):
        key = name.split(":")[0]
        return table.get(key, [])

    seen, stack = set(), [layer]
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        stack.extend(entry(current))
    return seen


def permitted(included, allowed):
    if included in allowed:
        return True
    if ":" in included:  # a family member: passes/*:ac
        family = included.split(":")[0]
        return family in allowed
    return False


def main():
    root = ROOT
    if len(sys.argv) == 3 and sys.argv[1] == "--root":
        root = os.path.abspath(sys.argv[2])
    elif len(sys.argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    table = read_table(os.path.join(root, "docs", "architecture.md"))
    failures = []
    for top in SOURCE_DIRS:
        for directory, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if not name.endswith((".h", ".cpp")):
                    continue
                path = os.path.relpath(os.path.join(directory, name), root)
                own = layer_of(path, table)
                if own is None:
                    failures.append(f"{path}: in no layer of docs/architecture.md")
                    continue
                allowed = allowed_closure(own, table)
                for number, line in enumerate(open(os.path.join(root, path), encoding="utf-8"), 1):
                    m = re.match(r'\s*#\s*include\s+"([^"]+/[^"]+)"', line)
                    if not m or m.group(1) == "framework/version.h":
                        continue
                    target = layer_of(m.group(1), table)
                    if target is None or target == own or permitted(target, allowed):
                        continue
                    failures.append(f"{path}:{number}: layer {own} includes {m.group(1)} (layer {target})")
    for failure in failures:
        print(failure)
    if failures:
        print(f"{len(failures)} include(s) break the layer table of docs/architecture.md")
        return 1
    print("every include follows the layer table of docs/architecture.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
