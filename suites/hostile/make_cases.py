#!/usr/bin/env python3
"""Generated inputs of the hostile corpus (suites/hostile/corpus, docs/hostile-inputs.md).

Inputs too large to keep in the repository (a 100 MB token, an 8000-deep chain of
subgraphs) or binary (torch.save archives) are written here, into a case's scratch
directory, just before the case runs. Every generator is deterministic: the same
name writes the same bytes.

  make_cases.py --scratch DIR --victim DIR NAME [NAME ...]
  make_cases.py --list

A case names its generators in case.json ("generate": ["NAME", ...]). Archives need
the project's Python (torch); run_corpus.py runs this script with --python.
"""
import argparse
import io
import os
import struct
import sys
import zipfile

GENERATORS = {}


def generator(name, help_text):
    def register(function):
        GENERATORS[name] = (function, help_text)
        return function
    return register


def write(path, data):
    mode = "wb" if isinstance(data, bytes) else "w"
    with open(path, mode) as f:
        f.write(data)


# ---- graph files ------------------------------------------------------------------------

def subgraph_nest(path, levels, calls_per_level):
    """A graph calling a nest of `levels` subgraphs, each calling the next
    `calls_per_level` times in sequence; the last level is one relu."""
    width = len(str(levels - 1))
    name = lambda i: f"s{i:0{width}d}"
    parts = []
    for i in range(levels):
        if i + 1 < levels:
            body, last = "", "%x"
            for k in range(calls_per_level):
                body += f'  %c{k} : f32[4] = passcheck::invoke_subgraph("{name(i + 1)}", [{last}])\n'
                last = f"%c{k}"
        else:
            body, last = "  %c0 : f32[4] = aten::relu(%x)\n", "%c0"
        parts.append(f"subgraph {name(i)}(\n    arg %x : f32[4]):\n{body}  return ({last})\n")
    parts.append(f'graph(arg %x : f32[4]):\n  %y : f32[4] = passcheck::invoke_subgraph("{name(0)}", [%x])\n'
                 "  return (%y)\n")
    write(path, "".join(parts))


@generator("subgraph_chain_8000", "chain.graph: 8000 subgraphs, each calling the next once")
def subgraph_chain(scratch, victim):
    subgraph_nest(os.path.join(scratch, "chain.graph"), levels=8000, calls_per_level=1)


@generator("subgraph_fanout_40", "fanout.graph: 40 subgraph levels, each calling the next twice (2^40 nodes expanded)")
def subgraph_fanout(scratch, victim):
    subgraph_nest(os.path.join(scratch, "fanout.graph"), levels=40, calls_per_level=2)


TOKEN_BYTES = 100 * 1024 * 1024


def graph_with_huge_token(path, before, letter, after):
    """A graph file whose text is `before`, 100 MB of `letter`, then `after`."""
    with open(path, "w") as f:
        f.write(before)
        f.write(letter * TOKEN_BYTES)
        f.write(after)


@generator("huge_value_name", "token.graph: a use of an undefined value whose name is 100 MB")
def huge_value_name(scratch, victim):
    graph_with_huge_token(os.path.join(scratch, "token.graph"),
                          "graph(arg %x : f32[4]):\n  %y : f32[4] = aten::relu(%", "v", ")\n  return (%y)\n")


@generator("huge_operator_name", "opname.graph: a node calling an operator whose name is 100 MB")
def huge_operator_name(scratch, victim):
    graph_with_huge_token(os.path.join(scratch, "opname.graph"),
                          "graph(arg %x : f32[4]):\n  %y : f32[4] = aten::", "o", "(%x)\n  return (%y)\n")


# ---- torch.save archives ------------------------------------------------------------------
# Archives are written with PyTorch's own zip writer, so LibTorch's reader takes them; the
# pickle inside is written by hand where it must say what torch.save never would.

def archive(path, pickle_bytes, storages):
    """A torch.save-format zip holding data.pkl = pickle_bytes and data/KEY = bytes."""
    import torch
    writer = torch._C.PyTorchFileWriter(path)
    writer.write_record("data.pkl", pickle_bytes, len(pickle_bytes))
    writer.write_record(".format_version", b"1", 1)
    writer.write_record("byteorder", b"little", 6)
    for key, data in storages.items():
        writer.write_record(f"data/{key}", data, len(data))
    writer.write_end_of_file()


def pickle_int(n):
    if 0 <= n < 256:
        return b"K" + bytes([n])
    if 0 <= n < 65536:
        return b"M" + struct.pack("<H", n)
    if -2**31 <= n < 2**31:
        return b"J" + struct.pack("<i", n)
    raw = n.to_bytes(8, "little", signed=True)
    return b"\x8a" + bytes([len(raw)]) + raw


def pickle_str(s):
    data = s.encode()
    return b"X" + struct.pack("<I", len(data)) + data


def pickle_tuple(items):
    return b"(" + b"".join(items) + b"t"


def tensor_pickle(storage_key, storage_numel, sizes, strides, offset=0, storage_class="FloatStorage"):
    """A list of one tensor, as torch.save writes it, with any sizes, strides and offset."""
    persistent_id = pickle_tuple([pickle_str("storage"), b"ctorch\n" + storage_class.encode() + b"\n",
                                  pickle_str(storage_key), pickle_str("cpu"), pickle_int(storage_numel)])
    args = pickle_tuple([persistent_id + b"Q", pickle_int(offset), pickle_tuple([pickle_int(s) for s in sizes]),
                         pickle_tuple([pickle_int(s) for s in strides]), b"\x89",
                         b"ccollections\nOrderedDict\n)R"])
    return b"\x80\x02]" + b"ctorch._utils\n_rebuild_tensor_v2\n" + args + b"Ra."


@generator("archive_past_storage_big", "in.pt: one f32 tensor of 2^40 elements over a storage of 4")
def archive_past_storage_big(scratch, victim):
    data = struct.pack("<4f", 1.0, 2.0, 3.0, 4.0)
    archive(os.path.join(scratch, "in.pt"), tensor_pickle("0", 4, [1 << 40], [1]), {"0": data})


@generator("archive_past_storage_small", "in.pt: one f32 tensor of 8 elements over a storage of 4")
def archive_past_storage_small(scratch, victim):
    data = struct.pack("<4f", 1.0, 2.0, 3.0, 4.0)
    archive(os.path.join(scratch, "in.pt"), tensor_pickle("0", 4, [8], [1]), {"0": data})


@generator("archive_offset_past_storage", "in.pt: one f32[4] tensor at storage offset 2^31 of a storage of 4")
def archive_offset_past_storage(scratch, victim):
    data = struct.pack("<4f", 1.0, 2.0, 3.0, 4.0)
    archive(os.path.join(scratch, "in.pt"), tensor_pickle("0", 4, [4], [1], offset=1 << 31), {"0": data})


@generator("archive_deep_nesting", "in.pt: 100000 lists nested in one another")
def archive_deep_nesting(scratch, victim, depth=100000):
    pickle = b"\x80\x02" + b"]" * depth + b"a" * (depth - 1) + b"."
    archive(os.path.join(scratch, "in.pt"), pickle, {})


@generator("archive_global_os_system", "in.pt: a pickle that calls os.system (touch {victim}/pwned)")
def archive_global_os_system(scratch, victim):
    command = f"touch {os.path.join(victim, 'pwned')}"
    pickle = b"\x80\x02cposix\nsystem\n" + pickle_tuple([pickle_str(command)]) + b"R."
    archive(os.path.join(scratch, "in.pt"), pickle, {})


@generator("pickle_reduce_os_system", "gm.pt: torch.save of an object whose __reduce__ is os.system (touch {victim}/pwned)")
def pickle_reduce_os_system(scratch, victim):
    import torch
    command = f"touch {os.path.join(victim, 'pwned')}"

    class Payload:
        def __reduce__(self):
            return (os.system, (command,))

    torch.save(Payload(), os.path.join(scratch, "gm.pt"))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scratch", help="the case's scratch directory (written into)")
    parser.add_argument("--victim", help="the directory no case may write into")
    parser.add_argument("--list", action="store_true", help="list the generators")
    parser.add_argument("names", nargs="*")
    args = parser.parse_args()
    if args.list:
        for name, (_, help_text) in sorted(GENERATORS.items()):
            print(f"{name:30} {help_text}")
        return 0
    if not args.scratch or not args.victim:
        parser.error("--scratch and --victim are required")
    for name in args.names:
        if name not in GENERATORS:
            print(f"make_cases.py: unknown generator '{name}' (--list names them)", file=sys.stderr)
            return 2
        GENERATORS[name][0](args.scratch, args.victim)
    return 0


if __name__ == "__main__":
    sys.exit(main())
