#!/usr/bin/env python3
"""Renders passcheck's HTML reports in headless Chromium (CTest label `report`).

Runs `passcheck check --model mlp --steps 2 --pipeline P --report` and `passcheck equiv
claims.graph --pipeline cse --report`, then for each report: a screenshot must be a
non-empty PNG; the DOM Chromium builds (--dump-dom) must hold the sections and the
numbers the command printed (steps, node counts, per-step value counts, the claim
verdict, the diff's counts); and the page must load nothing: the file holds no URL and
no external reference, and Chromium's network log (--log-net-log, with the proxy pointed
at a closed port and every host unresolvable) shows no request made by the page. Before
that, the network check runs on a page that does reference the network and must flag it.
Then the report of a failing equiv (exit 1) must say FAILED with the differing row, that
of a missing input file (exit 2) ERROR with the message, and a directory as --report is
refused with exit 2 before the run.

Usage: render_report_test.py PASSCHECK WORKDIR [--drop-section ID]
--drop-section removes that section from the check report before rendering: the test must
then fail (CTest report.dom_check_catches_a_missing_section, WILL_FAIL).
Exit 0 pass, 1 fail, 77 skipped (no chromium).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser

CHECK_PIPELINE = "canonicalize,sac-tag{policy=eager},remat"
SECTIONS = ("verdict", "passes", "memory", "claims", "steps")
EXTERNAL = ("http://", "https://", "src=", "url(", "<script", "<link", "@import", "srcset")
failures = []


def expect(condition, message):
    if not condition:
        failures.append(message)
        print("FAIL: " + message)


def chromium_flags(workdir):
    # No network: every name unresolvable and the proxy a closed port; the browser's own
    # background traffic switched off as far as flags allow (what remains is told apart
    # from the page's requests below).
    return ["--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--disable-extensions", "--proxy-server=127.0.0.1:9",
            "--host-resolver-rules=MAP * ~NOTFOUND", "--user-data-dir=" + os.path.join(workdir, "chromium-profile")]


def run_chromium(chromium, workdir, args):
    result = subprocess.run([chromium] + chromium_flags(workdir) + args, capture_output=True, text=True, timeout=120)
    return result


def page_requests(netlog_path, page_url):
    """URLs the page itself asked for: requests in the file:// page's network partition."""
    with open(netlog_path, encoding="utf-8") as f:
        text = f.read()
    # Chromium may stop before closing the JSON array.
    try:
        log = json.loads(text)
    except json.JSONDecodeError:
        log = json.loads(text.rstrip().rstrip(",") + "]}")
    types = {v: k for k, v in log["constants"]["logEventTypes"].items()}
    urls = set()
    for event in log["events"]:
        params = event.get("params") or {}
        if types.get(event["type"]) != "URL_REQUEST_START_JOB" or "url" not in params:
            continue
        partition = params.get("network_isolation_key", "") + " " + params.get("site_for_cookies", "")
        if "file://" in partition and params["url"] != page_url:
            urls.add(params["url"])
    return urls


def render(chromium, workdir, html_path, name):
    url = "file://" + os.path.abspath(html_path)
    png = os.path.join(workdir, name + ".png")
    if os.path.exists(png):
        os.remove(png)
    run_chromium(chromium, workdir, ["--screenshot=" + png, "--window-size=1280,2400", url])
    expect(os.path.exists(png) and os.path.getsize(png) > 1000, f"{name}: no screenshot (or an empty one) at {png}")
    if os.path.exists(png):
        with open(png, "rb") as f:
            expect(f.read(8) == b"\x89PNG\r\n\x1a\n", f"{name}: the screenshot is not a PNG")
    netlog = os.path.join(workdir, name + "-net.json")
    dom = run_chromium(chromium, workdir, ["--log-net-log=" + netlog, "--dump-dom", url]).stdout
    expect(os.path.exists(netlog), f"{name}: chromium wrote no network log")
    if os.path.exists(netlog):
        requests = page_requests(netlog, url)
        expect(not requests, f"{name}: the page requested {sorted(requests)}")
    return dom


class Dom(HTMLParser):
    """Text of each element with an id, and the <details> summaries per section."""

    def __init__(self, html):
        super().__init__()
        self.stack = []  # (tag, id)
        self.text_by_id = {}
        self.section = None
        self.summaries = {}
        self.polylines = 0
        self.in_summary = False
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.stack.append((tag, attrs.get("id")))
        if tag == "section":
            self.section = attrs.get("id")
        if attrs.get("id"):
            self.text_by_id.setdefault(attrs["id"], "")
        if tag == "summary":
            self.in_summary = True
            self.summaries.setdefault(self.section, []).append("")
        if tag == "polyline":
            self.polylines += 1

    def handle_endtag(self, tag):
        while self.stack:
            t, _ = self.stack.pop()
            if t == tag:
                break
        if tag == "summary":
            self.in_summary = False

    def handle_data(self, data):
        for _, element_id in self.stack:
            if element_id:
                self.text_by_id[element_id] += data
        if self.in_summary:
            self.summaries[self.section][-1] += data


def check_sections(dom, name):
    for section in SECTIONS:
        expect(section in dom.text_by_id, f"{name}: the DOM has no section '{section}'")


def check_file_is_self_contained(path, name):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    for needle in EXTERNAL:
        expect(needle not in text, f"{name}: the file contains '{needle}'")


def run(cmd, expected_rc):
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    expect(result.returncode == expected_rc,
           f"{' '.join(cmd)}: exit {result.returncode}, expected {expected_rc}\n{result.stdout}\n{result.stderr}")
    return result.stdout


def test_check(passcheck, chromium, workdir, drop_section):
    report = os.path.join(workdir, "check.html")
    out = run([passcheck, "check", "--model", "mlp", "--steps", "2", "--pipeline", CHECK_PIPELINE, "--report", report], 0)
    traced = re.search(r"model mlp: joint graph of (\d+) nodes", out)
    traced_row = re.search(r"^\(traced graph\)\s+(\d+)", out, re.M)
    steps = re.findall(r"^(\d+)\s+(\d+)/(\d+)\s+yes", out, re.M)
    pass_rows = re.findall(r"^(\S+)\s+(\d+)\s+([+-]\d+)\s+(yes|no)", out, re.M)
    expect(traced and traced_row and len(steps) == 2 and len(pass_rows) == 3, "check: unexpected output\n" + out)
    if failures:
        return
    if drop_section:
        with open(report, encoding="utf-8") as f:
            html = f.read()
        html = re.sub(r'<section id="%s">.*?</section>' % re.escape(drop_section), "", html, flags=re.S)
        with open(report, "w", encoding="utf-8") as f:
            f.write(html)
    check_file_is_self_contained(report, "check")
    dom = Dom(render(chromium, workdir, report, "check"))
    check_sections(dom, "check")
    expect("PASSED (exit code 0" in dom.text_by_id.get("verdict-line", ""), "check: the verdict is not PASSED")
    expect("all 2 steps bitwise equal" in dom.text_by_id.get("verdict-summary", ""), "check: verdict summary")
    facts = dom.text_by_id.get("facts", "")
    expect(f"traced graph nodes{traced_row.group(1)}" in facts, f"check: facts lack traced graph nodes {traced_row.group(1)}: {facts!r}")
    expect(f"nodes after the pipeline{pass_rows[-1][1]}" in facts, f"check: facts lack the final node count {pass_rows[-1][1]}")
    expect("steps2" in facts, "check: facts lack the step count")
    step_summaries = dom.summaries.get("steps", [])
    expect(len(step_summaries) == len(steps), f"check: {len(step_summaries)} step tables, the command printed {len(steps)} steps")
    for (step, equal, compared), summary in zip(steps, step_summaries):
        expect(summary.startswith(f"step {step}: {equal} of {compared} values bitwise equal"),
               f"check: step {step} summary {summary!r}")
    pass_summaries = dom.summaries.get("passes", [])
    for name, nodes, delta, changed in pass_rows:
        before = int(nodes) - int(delta)
        hits = [s for s in pass_summaries if s.startswith(f"{name}: ")]
        expect(hits and f"nodes {before} \u2192 {nodes}" in hits[0], f"check: no pass summary '{name}: ... nodes {before} -> {nodes}'")
    expect(dom.polylines >= 2, f"check: the memory chart has {dom.polylines} series, expected traced and after")


def test_equiv(passcheck, chromium, workdir, source_dir):
    report = os.path.join(workdir, "equiv.html")
    graph = os.path.join(source_dir, "suites", "report", "claims.graph")
    out = run([passcheck, "equiv", graph, "--pipeline", "cse", "--report", report], 0)
    record = re.search(r"passcheck equiv: cse: changed, nodes (\d+) -> (\d+)", out)
    verdict = re.search(r"verdict: EQUIVALENT \((\d+) values", out)
    expect(record and verdict, "equiv: unexpected output\n" + out)
    if not (record and verdict):
        return
    proved = run([passcheck, "prove", graph], 0)
    expect("1 claims: 1 proved" in proved, "prove: unexpected output\n" + proved)
    check_file_is_self_contained(report, "equiv")
    dom = Dom(render(chromium, workdir, report, "equiv"))
    check_sections(dom, "equiv")
    expect("verdict: EQUIVALENT" in dom.text_by_id.get("verdict-summary", ""), "equiv: verdict summary")
    expect("1 claims: 1 proved" in dom.text_by_id.get("claims-summary", ""), "equiv: the claims table lacks '1 claims: 1 proved'")
    claims_text = dom.text_by_id.get("claims", "")
    expect("view_identity" in claims_text and "proved" in claims_text, "equiv: the claim row is missing")
    passes = dom.text_by_id.get("passes", "")
    expect(f"nodes {record.group(1)} \u2192 {record.group(2)}" in passes, "equiv: the cse pass's node counts")
    expect("removed 1" in passes and "rewired 1" in passes, f"equiv: the cse diff counts: {passes[:400]!r}")
    steps = dom.summaries.get("steps", [])
    expect(steps and steps[0].startswith(f"outputs of A and B: {verdict.group(1)} of {verdict.group(1)} values"),
           f"equiv: comparison summary {steps!r}")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def test_outcomes(passcheck, workdir, source_dir):
    """The report on a verification failure (exit 1) and on bad input (exit 2)."""
    graph = os.path.join(source_dir, "suites", "report", "claims.graph")
    wrong = os.path.join(workdir, "wrong.graph")
    with open(wrong, "w", encoding="utf-8") as f:
        f.write(read(graph).replace("aten::add.Tensor(%a, %b, 1)", "aten::sub.Tensor(%a, %b, 1)"))
    failed = os.path.join(workdir, "failed.html")
    run([passcheck, "equiv", graph, wrong, "--report", failed], 1)
    html = read(failed) if os.path.exists(failed) else ""
    expect("FAILED (exit code 1" in html and "verdict: DIFFERENT" in html, "exit 1: the report does not say FAILED")
    expect('<td class="differs">DIFFERS</td>' in html, "exit 1: the report has no differing row")
    expect("added 1" in html and "removed 1" in html, "exit 1: the A -> B diff lacks the replaced node")
    bad = os.path.join(workdir, "bad-input.html")
    run([passcheck, "equiv", os.path.join(workdir, "missing.graph"), "--pipeline", "cse", "--report", bad], 2)
    html = read(bad) if os.path.exists(bad) else ""
    expect("ERROR (exit code 2" in html and "missing.graph" in html, "exit 2: the report does not name the error")
    out = subprocess.run([passcheck, "equiv", graph, "--pipeline", "cse", "--report", workdir], capture_output=True, text=True)
    expect(out.returncode == 2 and "--report file" in out.stderr, f"a directory as --report: exit {out.returncode}, {out.stderr!r}")


def test_network_check_catches_a_request(chromium, workdir):
    page = os.path.join(workdir, "external.html")
    with open(page, "w", encoding="utf-8") as f:
        f.write('<!DOCTYPE html><html><body><img src="http://report-test.invalid/x.png"></body></html>')
    netlog = os.path.join(workdir, "external-net.json")
    url = "file://" + os.path.abspath(page)
    run_chromium(chromium, workdir, ["--log-net-log=" + netlog, "--dump-dom", url])
    requests = page_requests(netlog, url) if os.path.exists(netlog) else set()
    expect("http://report-test.invalid/x.png" in requests,
           f"the network check missed a page's request (found {sorted(requests)}): it could not fail")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("passcheck")
    parser.add_argument("workdir")
    parser.add_argument("--source-dir", default=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    parser.add_argument("--drop-section")
    args = parser.parse_args()
    chromium = os.environ.get("PASSCHECK_CHROMIUM") or shutil.which("chromium")
    if not chromium:
        print("SKIP: chromium is not installed (ci/bootstrap.sh installs it)")
        return 77
    os.makedirs(args.workdir, exist_ok=True)
    test_network_check_catches_a_request(chromium, args.workdir)
    test_check(args.passcheck, chromium, args.workdir, args.drop_section)
    if not args.drop_section:
        test_equiv(args.passcheck, chromium, args.workdir, args.source_dir)
        test_outcomes(args.passcheck, args.workdir, args.source_dir)
    if failures:
        print(f"{len(failures)} report check(s) failed")
        return 1
    print("reports render in chromium: sections, numbers and no network access as expected")
    return 0


if __name__ == "__main__":
    sys.exit(main())
