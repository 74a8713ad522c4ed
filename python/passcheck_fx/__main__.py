"""Command line of the FX bridge:

  python3 -m passcheck_fx export GM.pt [-o OUT.graph] [--inputs IN.pt] [--kinds name=param,...] [--allow-pickle]
  python3 -m passcheck_fx verify-pass MODULE:FUNCTION [--model llama3] [--steps 5] [--workdir DIR]

GM.pt is a torch.save'd GraphModule of aten ops (torch.save(gm, "gm.pt")); --inputs an
archive of example inputs (passcheck_fx.save_inputs) used to run ShapeProp when nodes
carry no types. A GraphModule is code: unpickling one runs whatever the file names, so
GM.pt is read with torch.load's weights-only mode, which refuses it, unless
--allow-pickle says the file is yours (never pass it for a file from a bug report).
--inputs is always read weights-only. Exit 0 written, 2 a graph that cannot be exported
or a bad file (one line naming the node or the file).

verify-pass traces one of torchtitan's debug models with graph_trainer's tracer, applies
the pass MODULE:FUNCTION to its joint graph and verifies it bit for bit
(passcheck_fx.titan.verify_pass; docs/verifying-a-python-pass.md). Exit 0 verified, 1 the
pass changed what the step computes (or raised: its last frames are printed), 2 bad input
(a pass that cannot be imported, an unknown model, no passcheck binary).
"""
import argparse
import re
import sys
import traceback


def _one_line(text, limit=400):
    """`text` on one line (an exception's message may span several), cut at `limit`."""
    line = " ".join(part.strip() for part in str(text).splitlines() if part.strip())
    line = re.sub(r"\x1b\[[0-9;]*m", "", line)  # torch's messages carry terminal colours
    return line if len(line) <= limit else line[:limit - 3] + "..."


def _frames(error, limit=4):
    """The last `limit` frames of `error`'s traceback as "  at FILE:LINE in FUNC" lines."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if not f.filename.startswith("<frozen ")][-limit:]
    return "\n".join(f"  at {f.filename}:{f.lineno} in {f.name}" for f in frames)


def _parser():
    parser = argparse.ArgumentParser(prog="python3 -m passcheck_fx", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    export = sub.add_parser("export", help="write a saved GraphModule as passcheck graph text")
    export.add_argument("module", help="torch.save'd torch.fx.GraphModule")
    export.add_argument("-o", "--out", help="graph file to write (default: stdout)")
    export.add_argument("--inputs", help="torch.save'd list of example inputs (for ShapeProp; read weights-only)")
    export.add_argument("--kinds", default="", help="placeholder roles: name=param,name=buffer,...")
    export.add_argument("--allow-pickle", action="store_true",
                        help="load MODULE with Python's full unpickler, which runs whatever code the file names "
                             "(a GraphModule is code): only for files you made yourself, never for one from a bug report")
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
    return parser


def main(argv=None):
    args = _parser().parse_args(argv)  # a usage error: argparse's message, exit 2
    if args.command == "verify-pass":
        try:
            return _verify_pass(args)
        except Exception as error:  # noqa: BLE001 - anything unforeseen is still one line, exit 2
            print(f"passcheck_fx verify-pass: {args.pass_spec}: {type(error).__name__}: {_one_line(error)}",
                  file=sys.stderr)
            return 2
    try:
        return _export(args)
    except Exception as error:  # noqa: BLE001 - anything unforeseen is still one line, exit 2
        print(f"passcheck_fx export: {args.module}: {type(error).__name__}: {_one_line(error)}", file=sys.stderr)
        return 2


class _BadInput(Exception):
    """A bad file or option: printed as it is, exit 2."""


def _load_module(path, allow_pickle):
    """The GraphModule saved in `path`. Without allow_pickle, a weights-only load: it reads
    tensors and plain containers and refuses every other global, so a crafted file runs
    nothing; a GraphModule, being code, is refused with a message saying so."""
    import pickle
    import torch
    if allow_pickle:
        try:  # a make_fx GraphModule's pickle names this module, which torch imports lazily
            import torch._higher_order_ops.triton_kernel_wrap  # noqa: F401
        except Exception:  # noqa: BLE001
            pass
        return torch.load(path, weights_only=False)
    try:
        return torch.load(path, weights_only=True)
    except pickle.UnpicklingError as error:
        refused = re.search(r"Unsupported global: GLOBAL ([\w.]+)", str(error))
        what = f"names {refused.group(1)}, which" if refused else "holds objects that"
        raise _BadInput(f"{path}: the file {what} a weights-only load refuses: a pickled GraphModule is code, and "
                        f"loading it runs whatever the file names. Pass --allow-pickle to load it (only for files "
                        f"you made yourself, never for one from a bug report)") from None


def _parse_kinds(text):
    kinds = {}
    for item in (i.strip() for i in text.split(",")):
        if not item:
            continue
        name, sep, kind = item.partition("=")
        if not sep or not name or not kind:
            raise _BadInput(f"--kinds '{text}': '{item}' is not NAME=KIND (KIND: param, buffer or arg)")
        kinds[name] = kind
    return kinds


def _export(args):
    import torch
    from . import ExportError, export_graph
    try:
        kinds = _parse_kinds(args.kinds)
        try:
            gm = _load_module(args.module, args.allow_pickle)
        except _BadInput:
            raise
        except OSError as error:
            raise _BadInput(f"cannot read {args.module}: {type(error).__name__}: {_one_line(error)}") from None
        except Exception as error:  # noqa: BLE001 - truncated, corrupt, not an archive at all
            raise _BadInput(f"cannot read {args.module} as a torch.save archive: {type(error).__name__}: "
                            f"{_one_line(error)}") from None
        if not isinstance(gm, torch.fx.GraphModule):
            raise _BadInput(f"{args.module}: holds a {type(gm).__name__}, not a torch.fx.GraphModule")
        inputs = None
        if args.inputs:
            try:
                inputs = torch.load(args.inputs, weights_only=True)
            except Exception as error:  # noqa: BLE001 - a refused or broken archive is bad input
                raise _BadInput(f"--inputs {args.inputs}: cannot read it as a weights-only torch.save archive: "
                                f"{type(error).__name__}: {_one_line(error, 300)}") from None
        text = export_graph(gm, kinds, example_inputs=inputs)
    except ExportError as error:
        print(f"passcheck_fx export: {_one_line(error, 1000)}", file=sys.stderr)
        return 2
    except _BadInput as error:
        print(f"passcheck_fx export: {_one_line(error, 1000)}", file=sys.stderr)
        return 2
    if args.out:
        try:
            with open(args.out, "w") as f:
                f.write(text)
        except OSError as error:
            print(f"passcheck_fx export: cannot write -o {args.out}: {error.strerror or error}", file=sys.stderr)
            return 2
    else:
        sys.stdout.write(text)
    return 0


def _verify_pass(args):
    import importlib
    sys.path[:0] = args.python_path
    module_name, sep, function_name = args.pass_spec.partition(":")
    if not sep or not module_name or not function_name:
        print(f"passcheck_fx verify-pass: '{args.pass_spec}': expected MODULE:FUNCTION", file=sys.stderr)
        return 2
    from .titan import models, verify
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
    except BaseException as error:  # noqa: BLE001 - an import runs arbitrary code (sys.exit included): bad input
        print(f"passcheck_fx verify-pass: cannot load {args.pass_spec}: importing module '{module_name}' raised "
              f"{type(error).__name__}: {_one_line(error)}\n{_frames(error)}", file=sys.stderr)
        return 2
    if not callable(function):
        print(f"passcheck_fx verify-pass: {args.pass_spec} is not callable", file=sys.stderr)
        return 2
    from .titan import tools
    try:
        passcheck = tools.find_passcheck(args.passcheck)
    except FileNotFoundError as error:
        print(f"passcheck_fx verify-pass: {_one_line(error)}", file=sys.stderr)
        return 2
    try:
        report = verify.verify_pass(function, model=args.model, steps=args.steps, seed=args.seed,
                                    passcheck=passcheck, workdir=args.workdir, raise_on_failure=False,
                                    require_change=args.require_change)
    except BaseException as error:  # noqa: BLE001 - the pass raised (sys.exit included): a verification failure
        print(f"passcheck_fx verify-pass: the pass {args.pass_spec} raised {type(error).__name__}: "
              f"{_one_line(error)}\n{_frames(error)}", file=sys.stderr)
        return 1
    print(report.summary())
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
