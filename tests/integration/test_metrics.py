#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""An operator's view of a busy host: `vectora-sandbox metrics` and the
daemon API's `metrics` tool in the Prometheus text exposition format.

A fresh daemon serves a known mix of calls (two commands, a failed read, a
config the daemon refuses, an unknown tool); the output is read with a real
parser (python3-prometheus-client's, as Prometheus' own Python client reads
a scrape) and must give exactly those counts: calls by tool and result,
refusals by reason, a latency histogram per tool whose buckets add up,
workspaces and jails by state, jail starts. Names follow Prometheus'
conventions (one prefix, snake case, _total on counters, base units).
Without a daemon the CLI says so; unknown arguments are refused. TAP."""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
from vtest import CLI, Daemon, Skip, Tap, check, make_ws, run_cases  # noqa: E402
from vdaemon import SANDBOX  # noqa: E402

T = Tap()
# The Debian package's parser lives with the system's Python.
SYSTEM_PY = "/usr/bin/python3"
PARSE = r"""
import json, sys
from prometheus_client.parser import text_string_to_metric_families
out = []
for fam in text_string_to_metric_families(sys.stdin.read()):
    out.append({"name": fam.name, "type": fam.type, "help": fam.documentation,
                "samples": [[s.name, s.labels, s.value] for s in fam.samples]})
print(json.dumps(out))
"""


def parse(text):
    """The families a real Prometheus parser reads from text."""
    if not os.access(SYSTEM_PY, os.X_OK):
        raise Skip("no %s to run the Prometheus parser with" % SYSTEM_PY)
    probe = subprocess.run([SYSTEM_PY, "-c", "import prometheus_client.parser"], capture_output=True, text=True)
    if probe.returncode != 0:
        raise Skip("python3-prometheus-client is not installed (scripts/install-deps installs it)")
    r = subprocess.run([SYSTEM_PY, "-c", PARSE], input=text, capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, ("the Prometheus parser refused the output", r.stderr[-2000:], text[:2000]))
    return json.loads(r.stdout)


def value(fams, sample, **labels):
    """The value of the one sample named sample with exactly these labels
    (0 when there is none: a zero series may be left out)."""
    hits = [v for f in fams for n, lab, v in f["samples"] if n == sample and lab == labels]
    check(len(hits) <= 1, ("more than one sample", sample, labels, hits))
    return hits[0] if hits else 0


def metrics_text(d):
    r = subprocess.run([CLI, "--socket", d.sock, "metrics"], capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, ("vectora-sandbox metrics", r.returncode, r.stderr))
    return r.stdout


def t_counts_parse(tmp):
    """The mix of calls comes back as exactly those counts, through a real
    parser."""
    d = Daemon(tmp, "m")
    try:
        sb = make_ws(tmp, "m-sb", SANDBOX)
        bad = make_ws(tmp, "m-bad", "[sandbox]\nno_such_key = 1\n")
        c = d.conn()
        for cmd in ("true", "echo two"):
            r = c.call({"tool": "terminal", "workspace": sb, "command": cmd})
            check(r.get("ok"), r)
        r = c.call({"tool": "file_read", "workspace": sb, "path": "missing.txt"})
        check(r.get("error", {}).get("code") == "not_found", r)
        r = c.call({"tool": "terminal", "workspace": bad, "command": "true"})
        check(r.get("error", {}).get("code") == "config_invalid", r)
        r = c.call({"tool": "no_such_tool", "workspace": sb})
        check(r.get("error", {}).get("code") == "unknown_tool", r)
        c.close()
        text = metrics_text(d)
        fams = parse(text)
        P = "vectora_sandbox_"
        check(value(fams, P + "calls_total", tool="terminal", code="ok") == 2, text)
        check(value(fams, P + "calls_total", tool="file_read", code="not_found") == 1, text)
        check(value(fams, P + "calls_total", tool="terminal", code="config_invalid") == 1, text)
        check(value(fams, P + "calls_total", tool="unknown", code="unknown_tool") == 1, text)
        check(value(fams, P + "refusals_total", reason="config_invalid") == 1, text)
        check(value(fams, P + "refusals_total", reason="not_found") == 0, "a failed read is no refusal")
        # The histogram: terminal's four calls (two ok, one refused), buckets
        # cumulative and ending at the count; the sum is positive.
        count = value(fams, P + "call_duration_seconds_count", tool="terminal")
        check(count == 3, ("terminal's latency count", count, text))
        buckets = [(float(lab["le"]), v) for f in fams for n, lab, v in f["samples"]
                   if n == P + "call_duration_seconds_bucket" and lab.get("tool") == "terminal"]
        check(len(buckets) >= 10 and buckets[-1] == (float("inf"), count), buckets)
        check(all(a[0] < b[0] and a[1] <= b[1] for a, b in zip(buckets, buckets[1:])), buckets)
        check(value(fams, P + "call_duration_seconds_sum", tool="terminal") > 0, text)
        check(value(fams, P + "workspaces", state="sandboxed") == 1, text)
        check(value(fams, P + "workspaces", state="refused") == 1, text)
        check(value(fams, P + "jails", state="serving") == 1, text)
        check(value(fams, P + "jail_starts_total") == 1, text)
        check(value(fams, P + "jail_crashes_total") == 0, text)
        check(value(fams, P + "audit_log_writable") == 1, text)
        check(value(fams, P + "start_time_seconds") > 1.7e9, text)
    finally:
        d.stop()


def t_conventions(tmp):
    """Prometheus' naming conventions: one prefix, snake case, help and type
    on every family, counters' samples end in _total, unit suffixes in base
    units, no millisecond or kilobyte names."""
    d = Daemon(tmp, "mc")
    try:
        sb = make_ws(tmp, "mc-sb", SANDBOX)
        c = d.conn()
        check(c.call({"tool": "terminal", "workspace": sb, "command": "true"}).get("ok"), "warm")
        c.close()
        text = metrics_text(d)
        fams = parse(text)
        check(len(fams) >= 15, [f["name"] for f in fams])
        for f in fams:
            check(re.fullmatch(r"vectora_sandbox_[a-z][a-z0-9_]*", f["name"]), f["name"])
            check(f["help"] and f["type"] in ("counter", "gauge", "histogram"), f)
            check(not re.search(r"_(ms|millis|milliseconds|us|kb|mb|kib|mib)(_|$)", f["name"]), f["name"])
            for n, _, v in f["samples"]:
                if f["type"] == "counter":
                    check(n.endswith("_total"), (f["name"], n))
                check(v >= 0, (n, v))
        # Every line is a comment or a sample; the text ends with a newline.
        check(text.endswith("\n"), repr(text[-40:]))
        for line in text.splitlines():
            check(line.startswith("# HELP ") or line.startswith("# TYPE ") or
                  re.fullmatch(r'vectora_sandbox_\w+(\{[^}]*\})? [0-9.e+Inf-]+', line), line)
    finally:
        d.stop()


def t_api_and_errors(tmp):
    """The daemon API's `metrics`: the same text in the result's "metrics";
    an unknown argument is bad_request; the CLI without a daemon says so."""
    d = Daemon(tmp, "ma")
    try:
        c = d.conn()
        r = c.call({"tool": "metrics"})
        check(r.get("ok") and r["metrics"].startswith("# HELP vectora_sandbox_"), r)
        r = c.call({"tool": "metrics", "limit": 5})
        check(r.get("error", {}).get("code") == "bad_request", r)
        c.close()
    finally:
        d.stop()
    r = subprocess.run([CLI, "--socket", os.path.join(tmp, "none.sock"), "metrics"], capture_output=True, text=True,
                       timeout=60)
    check(r.returncode != 0 and "daemon_unreachable" in r.stderr, (r.returncode, r.stderr))


def main():
    sys.exit(run_cases(T, [t_counts_parse, t_conventions, t_api_and_errors], "vectora-metrics-"))


if __name__ == "__main__":
    main()
