"""Command line of the FX bridge:

  python3 -m passcheck_fx export GM.pt [-o OUT.graph] [--inputs IN.pt] [--kinds name=param,...]

GM.pt is a torch.save'd GraphModule of aten ops (torch.save(gm, "gm.pt")); --inputs an
archive of example inputs (passcheck_fx.save_inputs) used to run ShapeProp when nodes
carry no types. Exit 0 written, 2 a graph that cannot be exported or a bad file (the
message names the node or the file).
"""
import argparse
import sys

import torch

from . import ExportError, export_graph


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python3 -m passcheck_fx", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    export = sub.add_parser("export", help="write a saved GraphModule as passcheck graph text")
    export.add_argument("module", help="torch.save'd torch.fx.GraphModule")
    export.add_argument("-o", "--out", help="graph file to write (default: stdout)")
    export.add_argument("--inputs", help="torch.save'd list of example inputs (for ShapeProp)")
    export.add_argument("--kinds", default="", help="placeholder roles: name=param,name=buffer,...")
    args = parser.parse_args(argv)
    try:
        # A GraphModule is code: loading one needs the full unpickler (torch 2.6+ refuses
        # it by default). Load only modules you trust; inputs load as weights only.
        gm = torch.load(args.module, weights_only=False)
        if not isinstance(gm, torch.fx.GraphModule):
            raise ExportError(f"{args.module}: holds a {type(gm).__name__}, not a torch.fx.GraphModule")
        inputs = torch.load(args.inputs, weights_only=True) if args.inputs else None
        kinds = dict(item.split("=", 1) for item in args.kinds.split(",") if item)
        text = export_graph(gm, kinds, example_inputs=inputs)
    except ExportError as error:
        print(f"passcheck_fx export: {error}", file=sys.stderr)
        return 2
    except (OSError, RuntimeError, ValueError) as error:
        print(f"passcheck_fx export: cannot read {args.module}: {error}", file=sys.stderr)
        return 2
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
