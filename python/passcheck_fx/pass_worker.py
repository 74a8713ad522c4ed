"""The worker `passcheck fuzz --python-pass` runs a Python pass in.

    python3 -m passcheck_fx.pass_worker --pass MODULE:FUNCTION --graph case.py --out after.graph
    python3 -m passcheck_fx.pass_worker --pass MODULE:FUNCTION --check

case.py is a graph written by `passcheck export-python`; its build() gives the torch.fx
GraphModule. FUNCTION(gm) may rewrite it in place and return None, or return a
GraphModule, or an object with a .graph_module (torch.fx's PassResult). The result is
exported back to passcheck's graph text with passcheck_fx.export_graph and written to
--out. --check only imports MODULE, finds FUNCTION and imports the exporter.

The exit status tells passcheck whose fault a failure is (framework/cli/python_pass.cpp):
0 done, 2 MODULE:FUNCTION cannot be imported or is not callable, 3 the pass raised,
4 its result is not a GraphModule or cannot be exported, 5 case.py does not build.
Works with torch 1.13 and 2.x.
"""
import argparse
import importlib
import importlib.util
import os
import sys
import traceback

EXIT_BAD_SPEC = 2
EXIT_PASS_RAISED = 3
EXIT_BAD_RESULT = 4
EXIT_BAD_GRAPH = 5


def _fail(code, message):
    sys.stderr.write(message.rstrip("\n") + "\n")
    sys.exit(code)


def load_exporter():
    """The fx bridge's exporter: the one place this worker depends on it.

    PASSCHECK_FX_EXPORTER=MODULE:FUNCTION replaces it (the worker's own tests use a
    minimal exporter of the files passcheck writes).
    """
    override = os.environ.get("PASSCHECK_FX_EXPORTER")
    if override:
        module_name, _, function_name = override.partition(":")
        return getattr(importlib.import_module(module_name), function_name)
    from passcheck_fx import export_graph
    return export_graph


def load_pass(spec):
    module_name, sep, function_name = spec.partition(":")
    if not sep or not module_name or not function_name or ":" in function_name:
        _fail(EXIT_BAD_SPEC, "python pass '%s': expected MODULE:FUNCTION" % spec)
    try:
        module = importlib.import_module(module_name)
    except Exception:
        _fail(EXIT_BAD_SPEC, "cannot import module '%s' (sys.path: %s):\n%s"
              % (module_name, ", ".join(sys.path[:4]), traceback.format_exc(limit=3)))
    function = module
    for part in function_name.split("."):
        if not hasattr(function, part):
            _fail(EXIT_BAD_SPEC, "module '%s' (%s) has no '%s'"
                  % (module_name, getattr(module, "__file__", "?"), function_name))
        function = getattr(function, part)
    if not callable(function):
        _fail(EXIT_BAD_SPEC, "'%s' in module '%s' is not callable" % (function_name, module_name))
    return function


def load_case(path):
    try:
        spec = importlib.util.spec_from_file_location("passcheck_case", path)
        case = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(case)
        return case, case.build()
    except Exception:
        _fail(EXIT_BAD_GRAPH, "cannot rebuild the graph from %s:\n%s" % (path, traceback.format_exc()))


def result_module(original, result):
    """The GraphModule a pass produced, from any of the return conventions."""
    import torch.fx
    if result is None:
        return original
    if isinstance(result, torch.fx.GraphModule):
        return result
    inner = getattr(result, "graph_module", None)
    if isinstance(inner, torch.fx.GraphModule):
        return inner
    if isinstance(result, torch.fx.Graph):
        return torch.fx.GraphModule(original, result)
    _fail(EXIT_BAD_RESULT, "the pass returned %s; expected None, a GraphModule or an object with .graph_module"
          % type(result).__name__)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="passcheck_fx.pass_worker")
    parser.add_argument("--pass", dest="spec", required=True, help="MODULE:FUNCTION")
    parser.add_argument("--graph", help="a Python file written by passcheck export-python")
    parser.add_argument("--out", help="where the exported result goes")
    parser.add_argument("--check", action="store_true", help="only import the pass")
    args = parser.parse_args(argv)
    function = load_pass(args.spec)
    try:
        export_graph = load_exporter()
    except Exception:
        _fail(EXIT_BAD_SPEC, "cannot import the exporter passcheck_fx.export_graph:\n%s" % traceback.format_exc(limit=3))
    if args.check:
        return 0
    if not args.graph or not args.out:
        parser.error("--graph and --out are required unless --check")
    case, gm = load_case(args.graph)
    kinds = case.kinds(gm)
    try:
        result = function(gm)
    except Exception:
        _fail(EXIT_PASS_RAISED, "the pass raised:\n%s" % traceback.format_exc())
    after = result_module(gm, result)
    kinds.update(case.kinds(after))
    try:
        text = export_graph(after, kinds=kinds)
    except Exception:
        _fail(EXIT_BAD_RESULT, "cannot export the pass's result:\n%s" % traceback.format_exc())
    with open(args.out, "w") as out:
        out.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
