"""The worker `passcheck fuzz --python-pass` runs a Python pass in.

    python3 -m passcheck_fx.pass_worker --pass MODULE:FUNCTION --graph case.py --out after.graph
    python3 -m passcheck_fx.pass_worker --pass MODULE:FUNCTION --check
    python3 -m passcheck_fx.pass_worker --pass MODULE:FUNCTION --serve SOCKET

case.py is a graph written by `passcheck export-python`; its build() gives the torch.fx
GraphModule. FUNCTION(gm) may rewrite it in place and return None, or return a
GraphModule, or an object with a .graph_module (torch.fx's PassResult). The result is
exported back to passcheck's graph text with passcheck_fx.export_graph and written to
--out. A FUNCTION marked with passcheck_fx.partitioner returns a
passcheck_fx.PartitionedModule instead, whose module text is written to --out. --check
only imports MODULE, finds FUNCTION and imports the exporter, and prints
"passcheck-pass-kind: graph" or "passcheck-pass-kind: partitioner". --serve is the
fork server a fuzz campaign starts once (workflows/python_bridge/python_pass.cpp): it prints
the same kind line before it listens, and each request runs in a fork of a process that has
already imported torch and the pass.

The exit status tells passcheck whose fault a failure is (workflows/python_bridge/python_pass.cpp):
0 done, 2 MODULE:FUNCTION cannot be imported (its import raised anything, SystemExit and
KeyboardInterrupt included) or is not callable, 3 the pass raised (anything), 4 its result
is not a GraphModule or cannot be exported, 5 case.py does not build, 6 the fork server
cannot listen on its socket, 7 the case is not one the pass's caller would hand it (an inductor
pass takes functional graphs): it is left alone, not blamed on the pass. Tracebacks are printed as "  at FILE:LINE in FUNC" lines.

Nothing the pass starts outlives its request: a fork serving one (and this worker when
run alone) is a child subreaper, so what the pass abandons (a double fork, a daemon that
called setsid) is reparented to it, and it kills all its descendants before it answers.
Works with torch 1.13 and 2.x.
"""
import argparse
import importlib
import importlib.util
import json
import os
import select
import signal
import socket
import sys
import threading
import time
import traceback

EXIT_BAD_SPEC = 2
EXIT_PASS_RAISED = 3
EXIT_BAD_RESULT = 4
EXIT_BAD_GRAPH = 5
EXIT_CANNOT_SERVE = 6
EXIT_NOT_HANDED_OVER = 7

PR_SET_CHILD_SUBREAPER = 36


def _fail(code, message):
    sys.stderr.write(message.rstrip("\n") + "\n")
    sys.exit(code)


def describe_exception(error, frames=4):
    """`Type: message` and the last `frames` frames as "  at FILE:LINE in FUNC" lines: what
    passcheck shows of an exception (never a raw traceback block)."""
    message = str(error).strip()
    head = type(error).__name__ + (": " + message if message else "")
    tb = [f for f in traceback.extract_tb(error.__traceback__) if not f.filename.startswith("<frozen ")]
    tb = tb[-frames:] if frames else []
    return "\n".join([head] + ["  at %s:%s in %s" % (f.filename, f.lineno, f.name) for f in tb])


def become_subreaper():
    """prctl(PR_SET_CHILD_SUBREAPER): orphaned descendants are reparented to this process
    (best effort: without it, passcheck's own subreaper catches them)."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except Exception:  # noqa: BLE001
        pass


def _children_map():
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry, "rb") as f:
                data = f.read()
        except OSError:
            continue  # it ended meanwhile
        fields = data[data.rfind(b")") + 2:].split()
        if len(fields) < 2:
            continue
        children.setdefault(int(fields[1]), []).append((int(entry), fields[0].decode("ascii", "replace")))
    return children


def _has_children():
    """Whether this process has a child (any state); True when the kernel cannot say. As a
    subreaper, a process without children has no descendants at all."""
    try:
        for task in os.listdir("/proc/self/task"):
            with open("/proc/self/task/%s/children" % task) as f:
                if f.read().strip():
                    return True
        return False
    except OSError:
        return True


def kill_descendants():
    """Kills (SIGKILL) and reaps every descendant of this process: what the pass started.
    Killed processes' children are reparented here (a subreaper), so sweep until none is
    left alive."""
    if not _has_children():
        return
    me = os.getpid()
    for sweep in range(200):
        children = _children_map()
        alive, todo = False, [me]
        while todo:
            for pid, state in children.get(todo.pop(), []):
                todo.append(pid)
                if state not in ("Z", "X"):
                    alive = True
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
        while True:  # reap this process's dead children (none of them is still needed)
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
        if not alive:
            return
        time.sleep(0.001 if sweep < 10 else 0.01)


def load_exporter():
    """The fx bridge's exporter: the one place this worker depends on it."""
    from passcheck_fx import export_graph
    return export_graph


def load_pass(spec):
    module_name, sep, function_name = spec.partition(":")
    if not sep or not module_name or not function_name or ":" in function_name:
        _fail(EXIT_BAD_SPEC, "python pass '%s': expected MODULE:FUNCTION" % spec)
    try:
        module = importlib.import_module(module_name)
    except BaseException as error:  # an import runs arbitrary code: sys.exit, KeyboardInterrupt, ...
        _fail(EXIT_BAD_SPEC, "cannot import module '%s' (sys.path: %s): importing it raised %s"
              % (module_name, ", ".join(sys.path[:4]), describe_exception(error)))
    function = module
    for part in function_name.split("."):
        try:
            found = hasattr(function, part)
            if found:
                function = getattr(function, part)
        except BaseException as error:  # a module __getattr__ runs code too
            _fail(EXIT_BAD_SPEC, "module '%s': looking up '%s' raised %s"
                  % (module_name, function_name, describe_exception(error)))
        if not found:
            _fail(EXIT_BAD_SPEC, "module '%s' (%s) has no '%s'"
                  % (module_name, getattr(module, "__file__", "?"), function_name))
    if not callable(function):
        _fail(EXIT_BAD_SPEC, "'%s' in module '%s' is not callable" % (function_name, module_name))
    from passcheck_fx.callers import HandOverError, check_can_hand_over
    try:
        check_can_hand_over(function)
    except HandOverError as error:
        _fail(EXIT_BAD_SPEC, "python pass '%s': %s" % (spec, error))
    return function


def is_partitioner(function):
    """A pass marked with passcheck_fx.partitioner: its result is a module."""
    return bool(getattr(function, "passcheck_partitioner", False))


def load_case(path):
    try:
        spec = importlib.util.spec_from_file_location("passcheck_case", path)
        case = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(case)
        return case, case.build()
    except Exception as error:
        _fail(EXIT_BAD_GRAPH, "cannot rebuild the graph from %s: %s" % (path, describe_exception(error)))


def graph_module_of(original, result):
    """The GraphModule a pass produced, from any of the return conventions (None: the
    original, rewritten in place; a GraphModule; an object with .graph_module; a Graph);
    TypeError for anything else."""
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
    raise TypeError("the pass returned %s; expected None, a GraphModule or an object with .graph_module"
                    % type(result).__name__)


def result_module(original, result):
    """graph_module_of, a wrong return type ending the worker with EXIT_BAD_RESULT."""
    try:
        return graph_module_of(original, result)
    except TypeError as error:
        _fail(EXIT_BAD_RESULT, str(error))


def run_pass(spec, graph, out, hand_over="caller"):
    """Runs the pass on the graph file, handed over as its caller would (callers.py;
    `hand_over` "bare": tensor_meta only, no context), and writes the exported result;
    exits (SystemExit) with one of the statuses above on failure."""
    function = load_pass(spec)
    export_graph = _exporter_or_fail()
    case, gm = load_case(graph)
    from passcheck_fx import placeholder_kinds
    from passcheck_fx.callers import HandOverError, NotHandedOver, hand_over as prepare
    kinds = placeholder_kinds(gm)
    try:
        context = prepare(gm, function, hand_over)
    except HandOverError as error:
        _fail(EXIT_BAD_SPEC, "python pass '%s': %s" % (spec, error))
    except NotHandedOver as error:
        _fail(EXIT_NOT_HANDED_OVER, "not handed over: %s" % error)
    try:
        with context:
            result = function(gm)
    except BaseException as error:  # sys.exit in a pass is the pass failing, not the worker
        _fail(EXIT_PASS_RAISED, "the pass raised %s" % describe_exception(error, frames=6))
    if is_partitioner(function):
        text = getattr(result, "text", None)
        if not isinstance(text, str):
            _fail(EXIT_BAD_RESULT, "the partitioner returned %s; expected a passcheck_fx.PartitionedModule"
                  % type(result).__name__)
        with open(out, "w") as f:
            f.write(text)
        return 0
    after = result_module(gm, result)
    kinds.update(placeholder_kinds(after))
    try:
        text = export_graph(after, kinds=kinds)
    except Exception as error:
        _fail(EXIT_BAD_RESULT, "cannot export the pass's result: %s" % describe_exception(error))
    with open(out, "w") as f:
        f.write(text)
    return 0


def _exporter_or_fail():
    try:
        return load_exporter()
    except BaseException as error:
        _fail(EXIT_BAD_SPEC, "cannot import the exporter passcheck_fx.export_graph: %s" % describe_exception(error))


# What a partitioner (in practice, a wrapper of functorch's partitioners) imports on its
# first call: 3-4 s of imports that every forked case would otherwise repeat.
PARTITIONER_MODULES = ("functorch.compile", "torch._inductor.pattern_matcher")


def _say_kind(function):
    """The line workflows/python_bridge/python_pass.cpp reads: a partitioner is a module pass."""
    print("passcheck-pass-kind: %s" % ("partitioner" if is_partitioner(function) else "graph"))
    sys.stdout.flush()


def _preload_partitioner_modules():
    for name in PARTITIONER_MODULES:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001  a torch without them: each case imports what it needs
            pass


def _serve_one(conn):
    """A forked child's request: one JSON line {pass, path, graph, out, log}; answers the
    exit status as a line. Dies as soon as the client hangs up (its case timed out)."""
    request = b""
    while not request.endswith(b"\n"):
        chunk = conn.recv(65536)
        if not chunk:
            return 1
        request += chunk
    req = json.loads(request.decode("utf-8"))
    log = os.open(req["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    if req.get("path") and req["path"] not in sys.path:
        sys.path.insert(0, req["path"])

    become_subreaper()

    def watch():
        while True:
            select.select([conn], [], [])
            if not conn.recv(1, socket.MSG_PEEK):
                kill_descendants()
                os._exit(1)

    threading.Thread(target=watch, daemon=True).start()
    try:
        code = run_pass(req["pass"], req["graph"], req["out"], req.get("hand_over", "caller"))
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    except BaseException as error:
        sys.stderr.write("the worker failed: %s\n" % describe_exception(error))
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    kill_descendants()  # before the answer: when the case reads it, nothing of the pass runs
    conn.sendall(b"%d\n" % code)
    return code


def serve(socket_path, spec):
    """A fork server: imports torch, the exporter and the pass once, then forks a child
    per request on the Unix socket, so a case costs a fork instead of a Python start."""
    import torch  # noqa: F401  (imported once, shared by every child)
    import torch.fx  # noqa: F401
    import torch._subclasses.fake_tensor  # noqa: F401  (callers.py's fake values)
    import torch.fx.passes.fake_tensor_prop  # noqa: F401
    function = load_pass(spec)
    _exporter_or_fail()
    if is_partitioner(function):
        _preload_partitioner_modules()
    try:
        from passcheck_fx.callers import warm_up
        warm_up(function)
    except Exception:  # noqa: BLE001  each case then pays for what the warm-up would have done
        pass
    # Before the socket appears, so a campaign learns the kind from the server instead of
    # importing the pass a second time.
    _say_kind(function)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    try:
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(socket_path + ".tmp")
        server.listen(64)
        os.rename(socket_path + ".tmp", socket_path)  # the socket appears only once it listens
    except OSError as error:
        _fail(EXIT_CANNOT_SERVE, "cannot serve on %s: %s" % (socket_path, error))
    while True:
        conn, _ = server.accept()
        if os.fork() == 0:
            server.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            os._exit(_serve_one(conn))
        conn.close()


def main(argv=None):
    parser = argparse.ArgumentParser(prog="passcheck_fx.pass_worker")
    parser.add_argument("--pass", dest="spec", required=True, help="MODULE:FUNCTION")
    parser.add_argument("--graph", help="a Python file written by passcheck export-python")
    parser.add_argument("--out", help="where the exported result goes")
    parser.add_argument("--check", action="store_true", help="only import the pass")
    parser.add_argument("--serve", metavar="SOCKET", help="serve requests on this Unix socket")
    parser.add_argument("--hand-over", default="caller", choices=("caller", "bare"),
                        help="caller: the graph and context the pass's real caller gives; bare: tensor_meta only")
    args = parser.parse_args(argv)
    if args.serve:
        return serve(args.serve, args.spec)
    if not args.check and (not args.graph or not args.out):
        parser.error("--graph and --out are required unless --check")
    become_subreaper()
    try:
        if args.check:
            function = load_pass(args.spec)
            _exporter_or_fail()
            _say_kind(function)
            return 0
        return run_pass(args.spec, args.graph, args.out, args.hand_over)
    finally:
        kill_descendants()


if __name__ == "__main__":
    sys.exit(main())
