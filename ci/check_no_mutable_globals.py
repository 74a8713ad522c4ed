#!/usr/bin/env python3
"""Checks that the pass libraries hold no mutable global state.

A pass must be safe to run on two graphs in two threads at once, so nothing under
passes/ may keep a writable namespace-scope or function-local static (a switch set for
the duration of a call, a cache, a counter). Instead of trusting review, this reads the
built static libraries with `nm -C --format=sysv --defined-only` and fails, naming the
symbol and the object file, on every defined data symbol (nm classes B/b/D/d, and the
weak and unique objects V/v/u) that lies in a section still writable once the program
runs (.data*, .bss*, .tdata*, .tbss*). Sections .data.rel.ro* are read-only after
relocation (vtables, typeinfo, constant tables of pointers) and are not state.

Exit 0 when clean, 1 with each offender named, 2 when a library cannot be read.
Usage: check_no_mutable_globals.py [--nm NM] LIBRARY.a...
"""
import argparse
import subprocess
import sys

DATA_CLASSES = set("BbDdVvu")
WRITABLE_SECTIONS = (".data", ".bss", ".tdata", ".tbss")
READ_ONLY_AFTER_RELOCATION = ".data.rel.ro"

# Symbols that are writable memory but not pass state, each with the reason.
EXEMPT_PREFIXES = {
    "guard variable for ": "the compiler's one-time-initialization flag of a function-local static; the static "
    "itself has its own symbol and is checked on its own",
    "DW.ref.": "an exception-handling reference to the personality routine or a typeinfo, written only by the "
    "dynamic linker",
}
EXEMPT_NAMES = {
    "std::__ioinit": "the std::ios_base::Init object every file including <iostream> (through the LibTorch "
    "headers) gets; it constructs std::cout and holds no pass state",
    "passcheck::check::PassRegistry::global()::registry": "the built-in registry: a `static const` built once "
    "(thread-safe initialization of a function-local static) and never changed, so it lives in .bss only "
    "because its constructor runs at first use (passes/registry.cpp)",
}


def exemption(name):
    if name in EXEMPT_NAMES:
        return EXEMPT_NAMES[name]
    for prefix, why in EXEMPT_PREFIXES.items():
        if name.startswith(prefix):
            return why
    return None


def is_writable(section):
    return section.startswith(WRITABLE_SECTIONS) and not section.startswith(READ_ONLY_AFTER_RELOCATION)


def scan(nm, library):
    """Returns (offenders, defined symbol count) of one static library."""
    try:
        out = subprocess.run([nm, "-C", "--format=sysv", "--defined-only", library], check=True,
                             capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"check_no_mutable_globals: cannot read {library}: {e}", file=sys.stderr)
        sys.exit(2)
    offenders, defined, member = [], 0, "?"
    for line in out.splitlines():
        if line.startswith("Symbols from "):
            member = line[len("Symbols from "):].rstrip(":")
            continue
        fields = line.rsplit("|", 6)
        if len(fields) != 7 or fields[0].strip() == "Name":
            continue
        name, _, klass, _, _, _, section = (f.strip() for f in fields)
        defined += 1
        if klass not in DATA_CLASSES or not is_writable(section) or exemption(name):
            continue
        offenders.append(f"{member}: {name}  (nm class {klass}, section {section})")
    return offenders, defined


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nm", default="nm")
    parser.add_argument("libraries", nargs="+")
    args = parser.parse_args()
    offenders = []
    for library in args.libraries:
        found, defined = scan(args.nm, library)
        if defined == 0:
            print(f"check_no_mutable_globals: {library} defines no symbols: not a pass library?", file=sys.stderr)
            sys.exit(2)
        offenders += found
    if offenders:
        print("mutable global state in the pass libraries (a pass must hold none: thread it through the call, "
              "or make it constexpr):", file=sys.stderr)
        for o in offenders:
            print("  " + o, file=sys.stderr)
        return 1
    print(f"no mutable globals in {', '.join(args.libraries)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
