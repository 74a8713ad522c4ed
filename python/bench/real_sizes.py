"""One command for docs/performance.md "Production scale": production shapes on meta.

Runs `passcheck bench --production` (meta traces of the production configurations, every
pass and the default and autoparallel pipelines on them, with the gate on) and, for each
llama3 configuration, python/bench/make_fx_fake_trace.py (PyTorch's make_fx in fake-tensor
mode on the same model, with the torch of the Python running it), each make_fx run in its own process
under a time limit, then prints the tables side by side in markdown.

  .venv/bin/python python/bench/real_sizes.py [--passcheck build/bin/passcheck]
      [--configs llama3:8b,...] [--pass-limit S] [--make-fx-limit S] [--json FILE]
      [-- extra passcheck bench options, e.g. --parallel fsdp,tp --mesh dp=16,tp=8]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def run_make_fx(config, limit_s, layers=0):
    command = [sys.executable, os.path.join(HERE, "make_fx_fake_trace.py"), "--config", config]
    if layers:
        command += ["--layers", str(layers)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=limit_s)
    except subprocess.TimeoutExpired:
        return {"status": f"skipped: > {limit_s:.0f} s"}
    if done.returncode != 0:
        return {"status": "failed: " + (done.stderr.strip().splitlines() or ["exit %d" % done.returncode])[-1]}
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["status"] = "ok"
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--passcheck", default=os.path.join(ROOT, "build", "bin", "passcheck"))
    parser.add_argument("--configs", default="", help="MODEL:CONFIG list (default: all)")
    parser.add_argument("--pass-limit", type=float, default=60.0, help="seconds a pass may take")
    parser.add_argument("--make-fx-limit", type=float, default=600.0, help="seconds a make_fx trace may take")
    parser.add_argument("--json", default="", help="also write every figure here")
    parser.add_argument("extra", nargs="*", help="more `passcheck bench` options (after --)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "passcheck.json")
        command = [args.passcheck, "bench", "--production", "--pass-limit", str(args.pass_limit), "--json", out]
        if args.configs:
            command += ["--configs", args.configs]
        command += args.extra
        print("$ " + " ".join(command), flush=True)
        done = subprocess.run(command, stdout=subprocess.PIPE, text=True)
        if done.returncode != 0:
            print(done.stdout)
            return done.returncode
        passcheck_out = done.stdout
        with open(out) as f:
            figures = json.load(f)

    make_fx = {}
    for c in figures["configs"]:
        if c["model"] == "llama3":
            print(f"$ make_fx_fake_trace.py --config {c['config']}", flush=True)
            make_fx[c["config"]] = run_make_fx(c["config"], args.make_fx_limit)

    print()
    print("Meta tracing, passcheck (C++ tracer on the meta device) vs PyTorch make_fx "
          "(tracing_mode=\"fake\", FakeTensorMode parameters), same model, batch 1 x the configuration's sequence:")
    print()
    print("| config | parameters | passcheck nodes | passcheck trace ms | passcheck peak RSS MiB "
          "| make_fx nodes (ops) | make_fx trace ms | make_fx peak RSS MiB | make_fx / passcheck |")
    print("|---|---|---|---|---|---|---|---|---|")
    for c in figures["configs"]:
        name = f"{c['model']}:{c['config']}"
        fx = make_fx.get(c["config"]) if c["model"] == "llama3" else None
        if fx is None:
            fx_cells = ["(no Python model)"] * 3 + ["-"]
        elif fx["status"] != "ok":
            fx_cells = [fx["status"]] * 3 + ["-"]
        else:
            fx_cells = [f"{fx['fx_nodes']} ({fx['fx_ops']})", f"{fx['trace_ms']:.0f}", f"{fx['peak_rss_mib']:.0f}",
                        f"{fx['trace_ms'] / c['trace_ms']:.1f} x"]
        print(f"| {name} | {c['parameters'] / 1e9:.2f} B | {c['nodes']} | {c['trace_ms']:.0f} | "
              f"{c['peak_rss_mib']:.0f} | " + " | ".join(fx_cells) + " |")
    print()
    print(passcheck_out)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"passcheck": figures, "make_fx": make_fx}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
