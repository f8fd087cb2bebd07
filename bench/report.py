#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes docs/benchmarks.md from the JSON documents the bench/ programs print.

Usage: report.py --out FILE [--analysis bench/analysis.md] [--elapsed S] RESULT.json...

Each figure: median, min, max and p99 of all its samples (nearest rank).
Each ratio: computed round by round (median of the numerator's samples in a
round over the denominator's in the same round), then median, min and max of
those per-round ratios. Each target of issue 6 is marked met or NOT met with
the figure it was judged on. Python 3 stdlib only."""

import argparse
import datetime
import json
import math
import os
import platform
import subprocess
import sys


def pct(values, p):
    v = sorted(values)
    if not v:
        return float("nan")
    k = max(0, min(len(v) - 1, math.ceil(p / 100.0 * len(v)) - 1))
    return v[k]


def median(values):
    return pct(values, 50)


class Figure:
    def __init__(self, d):
        self.key = d["key"]
        self.label = d["label"]
        self.unit = d["unit"]
        self.rounds = d["rounds"]
        self.all = [x for r in self.rounds for x in r]

    def stat(self, name):
        if name == "median":
            return median(self.all)
        if name == "min":
            return min(self.all)
        if name == "max":
            return max(self.all)
        if name.startswith("p"):
            return pct(self.all, float(name[1:]))
        raise KeyError(name)


class Ratio:
    def __init__(self, d, figs):
        self.key = d["key"]
        self.label = d["label"]
        num, den = figs[d["num"]], figs[d["den"]]
        self.per_round = []
        for a, b in zip(num.rounds, den.rounds):
            if a and b and median(b) > 0:
                self.per_round.append(median(a) / median(b))

    def stat(self, name):
        if name == "median":
            return median(self.per_round)
        if name == "min":
            return min(self.per_round)
        if name == "max":
            return max(self.per_round)
        raise KeyError(name)


def fmt(v, unit):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    if unit == "us":
        if v >= 10000:
            return f"{v / 1000:.1f} ms"
        if v >= 1000:
            return f"{v / 1000:.2f} ms"
        return f"{v:.0f} us" if v >= 10 else f"{v:.1f} us"
    if unit == "kB":
        return f"{v / 1024:.2f} MB" if v >= 1024 else f"{v:.0f} kB"
    if unit == "x":
        return f"{v:.2f}x" if v < 100 else f"{v:.0f}x"
    if unit == "s":
        return f"{v:.2f} s"
    if unit == "calls/s":
        return f"{v:.0f}/s"
    if unit == "%":
        return f"{v:.1f} %"
    return f"{v:.3g} {unit}"


# The targets of issue 6. kind: figure (a figure's stat), ratio (a ratio's
# stat), value (a single number), p99diff (p99 of ref minus the median of
# ref2: the slowest 1 % of calls against a typical direct exec).
TARGETS = [
    dict(text="warm exec through the daemon: sandboxed / direct fork+exec <= 1.10 (median ratio)",
         kind="ratio", ref="exec.ratio.warm_direct", stat="median", op="<=", limit=1.10, unit="x"),
    dict(text="warm exec p99 overhead under 150 us (p99 of sandboxed minus the median direct fork+exec, same run)",
         kind="p99diff", ref="exec.warm.m0", ref2="exec.direct", op="<", limit=150, unit="us"),
    dict(text="per-call bwrap / warm exec >= 6 with no masks",
         kind="ratio", ref="exec.ratio.percall_warm.m0", stat="median", op=">=", limit=6, unit="x"),
    dict(text="per-call bwrap / warm exec >= 100 with 300 masks",
         kind="ratio", ref="exec.ratio.percall_warm.m300", stat="median", op=">=", limit=100, unit="x"),
    dict(text="file_read 4 KiB p50 <= 100 us through the daemon",
         kind="figure", ref="files.read.4k", stat="median", op="<=", limit=100, unit="us"),
    dict(text="file_read 1 MiB p50 <= 2 ms through the daemon",
         kind="figure", ref="files.read.1m", stat="median", op="<=", limit=2000, unit="us"),
    dict(text="file_write 4 KiB within 1.3x of a direct write (+fsync)",
         kind="ratio", ref="files.ratio.write4k_direct", stat="median", op="<=", limit=1.3, unit="x"),
    dict(text="cold start p50 <= 6 ms for 100 files",
         kind="figure", ref="cold.100", stat="median", op="<=", limit=6000, unit="us"),
    dict(text="cold start p50 <= 25 ms for 10 000 files",
         kind="figure", ref="cold.10000", stat="median", op="<=", limit=25000, unit="us"),
    dict(text="idle workspace <= 0.6 MB of memory all told (machine delta per workspace, 1 000 workspaces)",
         kind="value", ref="memory.machine_per_ws_kb", op="<=", limit=0.6 * 1024, unit="kB"),
    dict(text="1 000 idle workspaces started in under 4 s",
         kind="value", ref="memory.start_1000_s", op="<", limit=4, unit="s"),
    dict(text="200-workspace aggregate throughput >= 85 % of the unsandboxed figure",
         kind="ratio", ref="scale.ratio.throughput", stat="median", op=">=", limit=0.85, unit="x"),
]


def machine():
    m = {"nproc": os.cpu_count(), "kernel": platform.release(), "model": "unknown", "mem": "unknown"}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    m["model"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    m["mem"] = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    except OSError:
        pass
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Cpus_allowed_list"):
                    m["cpus_allowed"] = line.split(":", 1)[1].strip()
    except OSError:
        pass
    for cmd, key in ((["bwrap", "--version"], "bwrap"), (["git", "rev-parse", "--short", "HEAD"], "commit")):
        try:
            m[key] = subprocess.run(cmd, capture_output=True, text=True, timeout=5).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            m[key] = "unknown"
    return m


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--analysis")
    ap.add_argument("--elapsed", type=float)
    ap.add_argument("--command", default="make bench")
    ap.add_argument("results", nargs="+")
    a = ap.parse_args()

    docs, figs, ratios, values = [], {}, {}, {}
    for path in a.results:
        with open(path) as f:
            text = f.read().strip()
        if not text:
            continue
        d = json.loads(text.splitlines()[-1])
        docs.append(d)
        for fd in d["figures"]:
            figs[fd["key"]] = Figure(fd)
        for k, v in d.get("values", {}).items():
            values[k] = v
    for d in docs:
        for rd in d["ratios"]:
            if rd["num"] in figs and rd["den"] in figs:
                ratios[rd["key"]] = Ratio(rd, figs)

    out = []
    w = out.append
    m = machine()
    w("# Benchmarks\n")
    w("Generated by `" + a.command + "` (`scripts/run-bench`, programs in `bench/`, this page by "
      "`bench/report.py`). Do not edit by hand: rerun. Everything below comes from one run on the machine described; "
      "alternatives were measured side by side in the same run, interleaved (ABAB), and every ratio is computed "
      "round by round from those interleaved samples.\n")
    w("## Machine\n")
    w(f"- CPU: {m['model']}, {m['nproc']} logical CPUs (allowed: {m.get('cpus_allowed', '?')}); "
      "**no CPU pinning** (the benchmarks, the daemon and the jails float over all CPUs, as in production)")
    w(f"- Kernel: {m['kernel']}; memory: {m['mem']}; {m['bwrap']}")
    w(f"- Commit: {m['commit']}; date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}"
      + (f"; whole run: {a.elapsed:.0f} s" if a.elapsed else ""))
    w("- Client: each benchmark is a C program talking to `vectora-sandboxd`'s socket directly over one "
      "persistent connection (no CLI start-up in any figure); the daemon runs with `--audit-log` on, as deployed.\n")

    w("## Targets (issue 6)\n")
    w("| target | measured | verdict |")
    w("|---|---|---|")
    met = 0
    for t in TARGETS:
        v = None
        try:
            if t["kind"] == "figure":
                v = figs[t["ref"]].stat(t["stat"])
            elif t["kind"] == "ratio":
                v = ratios[t["ref"]].stat(t["stat"])
            elif t["kind"] == "value":
                v = values[t["ref"]]
            elif t["kind"] == "p99diff":
                v = figs[t["ref"]].stat("p99") - figs[t["ref2"]].stat("median")
        except (KeyError, ValueError):
            v = None
        if v is None:
            verdict = "not measured"
        else:
            ok = {"<=": v <= t["limit"], "<": v < t["limit"], ">=": v >= t["limit"]}[t["op"]]
            met += ok
            verdict = "met" if ok else "**NOT met**"
        w(f"| {t['text']} | {fmt(v, t['unit'])} | {verdict} |")
    w(f"\n{met} of {len(TARGETS)} targets met.\n")

    if a.analysis and os.path.exists(a.analysis):
        with open(a.analysis) as f:
            w(f.read().rstrip() + "\n")

    titles = {"exec": "1. Warm exec", "files": "2. File operations", "cold": "3. Cold start",
              "memory": "4. Memory", "scale": "5. Scale", "network": "6. Network allowlist: a download through the proxy"}
    for d in docs:
        w(f"## {titles.get(d['bench'], d['bench'])}\n")
        if d["figures"]:
            w("| figure | median | min | max | p99 | samples |")
            w("|---|---|---|---|---|---|")
            for fd in d["figures"]:
                f = figs[fd["key"]]
                w(f"| {f.label} | {fmt(f.stat('median'), f.unit)} | {fmt(f.stat('min'), f.unit)} | "
                  f"{fmt(f.stat('max'), f.unit)} | {fmt(f.stat('p99'), f.unit)} | {len(f.all)} |")
            w("")
        rs = [ratios[r["key"]] for r in d["ratios"] if r["key"] in ratios]
        if rs:
            w("| ratio (round by round) | median | min | max | rounds |")
            w("|---|---|---|---|---|")
            for r in rs:
                w(f"| {r.label} | {fmt(r.stat('median'), 'x')} | {fmt(r.stat('min'), 'x')} | "
                  f"{fmt(r.stat('max'), 'x')} | {len(r.per_round)} |")
            w("")
        for n in d.get("notes", []):
            w(f"- {n}")
        w("")

    with open(a.out, "w") as f:
        f.write("\n".join(out).rstrip() + "\n")
    print(f"wrote {a.out}: {met} of {len(TARGETS)} targets met", file=sys.stderr)


if __name__ == "__main__":
    main()
