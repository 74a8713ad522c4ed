"""Command line of the FX bridge:

  python3 -m passcheck_fx export GM.pt [-o OUT.graph] [--inputs IN.pt] [--kinds name=param,...]
  python3 -m passcheck_fx verify-pass MODULE:FUNCTION [--model llama3] [--steps 5] [--workdir DIR]

GM.pt is a torch.save'd GraphModule of aten ops (torch.save(gm, "gm.pt")); --inputs an
archive of example inputs (passcheck_fx.save_inputs) used to run ShapeProp when nodes
carry no types. Exit 0 written, 2 a graph that cannot be exported or a bad file (the
message names the node or the file).

verify-pass traces one of torchtitan's debug models with graph_trainer's tracer, applies
the pass MODULE:FUNCTION to its joint graph and verifies it bit for bit
(passcheck_fx.titan.verify_pass; docs/verifying-a-python-pass.md). Exit 0 verified, 1 the
pass changed what the step computes, 2 bad input (a pass that cannot be imported, an
unknown model, no passcheck binary).
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
    verify = sub.add_parser("verify-pass", help="verify a graph pass on a torchtitan debug model's training step")
    verify.add_argument("pass_spec", metavar="MODULE:FUNCTION", help="the pass: a function of a GraphModule")
    verify.add_argument("--model", default="llama3", help="torchtitan debug model: llama3, qwen3, deepseek_v3")
    verify.add_argument("--steps", type=int, default=5, help="optimizer steps compared with eager (0: none)")
    verify.add_argument("--seed", type=int, default=0, help="initialisation and data seed")
    verify.add_argument("--workdir", help="where the graphs, inputs and report go (default: a new temporary directory)")
    verify.add_argument("--passcheck", help="the passcheck binary (default: $PASSCHECK_BINARY, the build tree's, PATH)")
    verify.add_argument("--python-path", action="append", default=[], help="directory to import the pass from")
    verify.add_argument("--require-change", action="store_true",
                        help="fail when the pass leaves the graph unchanged (it should act on this model)")
    args = parser.parse_args(argv)
    if args.command == "verify-pass":
        return _verify_pass(args)
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


def _verify_pass(args):
    import importlib
    import traceback
    from .titan import models, verify
    sys.path[:0] = args.python_path
    module_name, sep, function_name = args.pass_spec.partition(":")
    if not sep or not module_name or not function_name:
        print(f"passcheck_fx verify-pass: '{args.pass_spec}': expected MODULE:FUNCTION", file=sys.stderr)
        return 2
    if args.model not in models.MODELS:
        print(f"passcheck_fx verify-pass: unknown model '{args.model}': expected one of {', '.join(models.MODELS)}",
              file=sys.stderr)
        return 2
    if args.steps < 0:
        print(f"passcheck_fx verify-pass: --steps {args.steps}: expected 0 or more", file=sys.stderr)
        return 2
    try:
        function = importlib.import_module(module_name)
        for part in function_name.split("."):
            function = getattr(function, part)
    except Exception as error:  # an import runs arbitrary code: any error is bad input
        print(f"passcheck_fx verify-pass: cannot load {args.pass_spec}: {type(error).__name__}: {error}",
              file=sys.stderr)
        return 2
    if not callable(function):
        print(f"passcheck_fx verify-pass: {args.pass_spec} is not callable", file=sys.stderr)
        return 2
    try:
        report = verify.verify_pass(function, model=args.model, steps=args.steps, seed=args.seed,
                                    passcheck=args.passcheck, workdir=args.workdir, raise_on_failure=False,
                                    require_change=args.require_change)
    except FileNotFoundError as error:
        print(f"passcheck_fx verify-pass: {error}", file=sys.stderr)
        return 2
    except Exception:
        print(f"passcheck_fx verify-pass: the pass {args.pass_spec} raised:\n{traceback.format_exc(limit=-4)}",
              file=sys.stderr)
        return 1
    print(report.summary())
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
