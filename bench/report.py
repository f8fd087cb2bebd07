#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes docs/benchmarks.md from the JSON documents the bench/ programs print.

Usage: report.py --out FILE [--analysis bench/analysis.md] [--elapsed S] RESULT.json...

Each figure: median, min, max and p99 of all its samples (nearest rank).
Each ratio: computed round by round (median of the numerator's samples in a
round over the denominator's in the same round), then median, min and max of
those per-round ratios. Each target (issues 15 and 6) is marked met or NOT
met with the figure it was judged on; a warm call's time is split into
stages from probes measured in the same rounds. Python 3 stdlib only."""

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
    if unit in ("directories", "workspaces"):
        return f"{v:,.0f} {unit}".replace(",", " ")
    return f"{v:.3g} {unit}"


# Targets. kind: figure (a figure's stat), ratio (a ratio's stat), value (a
# single number), p99diff (p99 of ref minus the median of ref2: the slowest
# 1 % of calls against a typical direct exec). The direct exec is
# posix_spawn (issue 15): fork+exec, which the first runs used, copies the
# page tables and flattered the sandbox.
TARGETS_15 = [
    dict(text="warm exec via daemon / direct posix_spawn, C client <= 1.15 (median ratio)",
         kind="ratio", ref="exec.ratio.warm_direct", stat="median", op="<=", limit=1.15, unit="x",
         floor=("ratio", ["exec.direct.spawn", "exec.relay"], ["exec.direct.spawn"]),
         floor_text="direct posix_spawn + the 4-hop relay, over the direct posix_spawn"),
    dict(text="warm exec via daemon / direct os.posix_spawn, Python client <= 1.15 (median ratio)",
         kind="ratio", ref="client.ratio.warm_spawn", stat="median", op="<=", limit=1.15, unit="x",
         floor=("ratio", ["client.spawn", "client.relay"], ["client.spawn"]),
         floor_text="direct os.posix_spawn + the 4-hop relay (Python), over the direct os.posix_spawn"),
    dict(text="per-call bwrap (same policy, 0 masks) / warm exec >= 6",
         kind="ratio", ref="exec.ratio.percall_warm.m0", stat="median", op=">=", limit=6, unit="x"),
    dict(text="file_read 4 KiB via daemon, raw, p50 <= 100 us (C client)",
         kind="figure", ref="files.read.4k.raw", stat="median", op="<=", limit=100, unit="us",
         floor=("sum", ["files.relay.4k", "files.direct.read.4k"]),
         floor_text="the 4-hop relay of a 4 KiB reply + a direct read"),
    dict(text="file_read 4 KiB via daemon, text, p50 <= 120 us (C client)",
         kind="figure", ref="files.read.4k", stat="median", op="<=", limit=120, unit="us",
         floor=("sum", ["files.relay.4k", "files.direct.read.4k"]),
         floor_text="the 4-hop relay of a 4 KiB reply + a direct read"),
    dict(text="idle workspace <= 0.6 MB all told (machine delta per workspace, 1 000 workspaces)",
         kind="value", ref="memory.machine_per_ws_kb", op="<=", limit=0.6 * 1024, unit="kB",
         floor=("value", "memory.floor_ns.machine_per_jail_kb", "memory.floor.machine_per_jail_kb"),
         floor_text="a bare bwrap jail started as the daemon starts it (the daemon's argv, its pids and memory "
                    "cgroups, pid 1 of its own pid namespace with its /proc: what ends a jail with its set-up when "
                    "the daemon dies), 1 000 of them, measured first in a run of its own as the workspaces are "
                    "(machine delta)"),
    dict(text="1 000 idle workspaces started in under 4 s",
         kind="value", ref="memory.start_1000_s", op="<", limit=4, unit="s",
         floor=("value", "memory.floor_ns.start_1000_s", "memory.floor.start_1000_s"),
         floor_text="1 000 bare bwrap jails started as the daemon starts them (the daemon's argv, their cgroups, "
                    "their own pid namespace)"),
]

# A target's floor (floor, floor_text): what the design's unavoidable part
# alone measures in the same run (the 4-hop relay, the direct read, a bare
# bwrap jail), so that a miss the floor itself misses is told apart from one
# that could be cut.


def floor_of(t, figs, values):
    f = t.get("floor")
    if not f:
        return None
    try:
        if f[0] == "ratio":
            return sum(figs[k].stat("median") for k in f[1]) / sum(figs[k].stat("median") for k in f[2])
        if f[0] == "sum":
            return sum(figs[k].stat("median") for k in f[1])
        # ("value", key, fallback...): the first measured (a floor that
        # needs root is not measured by a normal user).
        for k in f[1:]:
            v = values.get(k)
            if v is not None and not (isinstance(v, float) and math.isnan(v)):
                return v
        return None
    except (KeyError, ValueError, ZeroDivisionError):
        return None

TARGETS_6 = [
    dict(text="warm exec p99 overhead under 150 us (p99 of sandboxed minus the median direct posix_spawn, same run)",
         kind="p99diff", ref="exec.warm.m0", ref2="exec.direct.spawn", op="<", limit=150, unit="us"),
    dict(text="per-call bwrap / warm exec >= 100 with 300 masks",
         kind="ratio", ref="exec.ratio.percall_warm.m300", stat="median", op=">=", limit=100, unit="x"),
    dict(text="file_read 1 MiB p50 <= 2 ms through the daemon",
         kind="figure", ref="files.read.1m", stat="median", op="<=", limit=2000, unit="us"),
    dict(text="file_write 4 KiB within 1.3x of a direct write (+fsync)",
         kind="ratio", ref="files.ratio.write4k_direct", stat="median", op="<=", limit=1.3, unit="x"),
    dict(text="cold start p50 <= 6 ms for 100 files",
         kind="figure", ref="cold.100", stat="median", op="<=", limit=6000, unit="us"),
    dict(text="cold start p50 <= 25 ms for 10 000 files",
         kind="figure", ref="cold.10000", stat="median", op="<=", limit=25000, unit="us"),
    dict(text="200-workspace aggregate throughput >= 85 % of the unsandboxed figure",
         kind="ratio", ref="scale.ratio.throughput", stat="median", op=">=", limit=0.85, unit="x"),
]

TARGETS_29 = [
    dict(text="first call, 200 000 files / 20 000 dirs, new daemon (no walk cache) / `find` over the tree <= 1.2 "
              "(median ratio)",
         kind="ratio", ref="tree.200000.first_vs_find", stat="median", op="<=", limit=1.2, unit="x"),
    dict(text="first call after a daemon restart, tree unchanged, 200 000 files / `find` <= 0.3 (median ratio)",
         kind="ratio", ref="tree.200000.restart_vs_find", stat="median", op="<=", limit=0.3, unit="x"),
    dict(text="masks over time hold (a .pem made deep after the start is unreadable by the next call) in a "
              "workspace of 100 000 directories (the largest tree of the run that held; the run fails if one "
              "does not)",
         kind="value", ref="tree.mot_held_dirs", op=">=", limit=100000, unit="directories"),
    dict(text="100 workspaces x 20 000 directories on one daemon, default kernel limits: masks over time hold "
              "in all of them (workspaces that held)",
         kind="value", ref="tree.many.held", op=">=", limit=100, unit="workspaces"),
    dict(text="1 000 idle workspaces started (first calls, 8 in flight) <= 5 s",
         kind="value", ref="memory.start_1000_s", op="<=", limit=5, unit="s",
         floor=("value", "memory.floor_ns.start_1000_s", "memory.floor.start_1000_s"),
         floor_text="1 000 bare bwrap jails started as the daemon starts them (the daemon's argv, their cgroups, "
                    "their own pid namespace), 8 at once"),
    dict(text="workspaces' first calls (8 at a time) / bare bwrap jails with the same namespaces started the same "
              "way <= 1.5 (1 000 of each; the issue names 200)",
         kind="value", ref="memory.start_1000_vs_floor", op="<=", limit=1.5, unit="x"),
    dict(text="file_read 4 KiB via daemon, raw, p50 <= 120 us (C client)",
         kind="figure", ref="files.read.4k.raw", stat="median", op="<=", limit=120, unit="us",
         floor=("sum", ["files.relay.4k", "files.direct.read.4k"]),
         floor_text="the 4-hop relay of a 4 KiB reply + a direct read"),
    dict(text="file_read 4 KiB via daemon, text, p50 <= 150 us (C client)",
         kind="figure", ref="files.read.4k", stat="median", op="<=", limit=150, unit="us",
         floor=("sum", ["files.relay.4k", "files.direct.read.4k"]),
         floor_text="the 4-hop relay of a 4 KiB reply + a direct read"),
    dict(text="warm exec via daemon / direct posix_spawn, C client <= 1.25 (median ratio)",
         kind="ratio", ref="exec.ratio.warm_direct", stat="median", op="<=", limit=1.25, unit="x",
         floor=("ratio", ["exec.direct.spawn", "exec.relay"], ["exec.direct.spawn"]),
         floor_text="direct posix_spawn + the 4-hop relay, over the direct posix_spawn"),
    dict(text="warm exec via daemon / direct os.posix_spawn, Python client <= 1.25 (median ratio)",
         kind="ratio", ref="client.ratio.warm_spawn", stat="median", op="<=", limit=1.25, unit="x",
         floor=("ratio", ["client.spawn", "client.relay"], ["client.spawn"]),
         floor_text="direct os.posix_spawn + the 4-hop relay (Python), over the direct os.posix_spawn"),
    dict(text="10 MiB download through the allowlist proxy / the same download direct from the host <= 1.3 "
              "(median ratio)",
         kind="ratio", ref="network.ratio", stat="median", op="<=", limit=1.3, unit="x",
         floor=("ratio", ["network.floor"], ["network.host"]),
         floor_text="the same download through two zero-work splice relays (TCP -> unix socket -> TCP, as the "
                    "worker's relay and the proxy), over the direct one"),
]

# Issue 29's targets shown by tests rather than by a figure (the suite runs
# them as root and as an ordinary user; a test that fails fails `make test`).
TESTED_29 = [
    "masks over time hold past 4 096 and at 20 000 directories, as root (fanotify) and as an ordinary user "
    "(inotify within the user's share): `tests/integration/test_mask_scale.py` `t_deep_secret_is_masked`, "
    "`t_big_tree_among_small_ones`",
    "one workspace's watch overflow recycles none but its own jail (another's running command goes on): "
    "`t_flood_spares_other_workspace` in the same file",
]

TREE_KINDS = (("first", "first call, new daemon, no walk cache"),
              ("restart", "first call after a restart, tree unchanged"),
              ("find", "`find WS -name '*.pem'`"),
              ("mot", "masks over time: the call after a .pem appeared deep"),
              ("warm", "a warm call, nothing changed"))


def gnuplot(script):
    """Runs gnuplot (Debian's gnuplot-nox, scripts/install-deps) on script;
    False where it is missing."""
    try:
        return subprocess.run(["gnuplot"], input=script, text=True, capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def tree_page(w, figs, ratios, values, out_dir):
    """The scale page (issue 29): the first call and masks over time against
    the workspace's size, beside `find`, as SVG plots and tables."""
    sizes = values.get("tree.sizes") or []
    if not sizes or f"tree.{sizes[0]}.find" not in figs:
        return
    w("## Workspace size: the first call and masks over time against `find` (the scale page)\n")
    w("From `bench/bench-tree.py`: trees of ten files a directory, the example masks of docs/config.md and a "
      "protect glob; per size and round, in a rotating order: a new daemon on an empty state directory and its "
      "first call; the same daemon stopped and started again on that state directory and its first call (the "
      "walk cache read); `find WS -name '*.pem'` over the tree, twice; then on the first daemon, a .pem made in "
      "the tree's last directory and the next call (it must not read it: the run fails if it does), and a warm "
      "call. Medians with min and max over the rounds; ratios round by round. Daemon start-up is not timed."
      + (f" Load average during the run: {' '.join(values['tree.loadavg'])}." if values.get("tree.loadavg") else "")
      + "\n")
    stem = "benchmarks-tree"
    data = os.path.join(out_dir, stem + ".dat")
    rows = []
    for n in sizes:
        row = [str(n)]
        for k, _ in TREE_KINDS:
            f = figs.get(f"tree.{n}.{k}")
            row += [f"{f.stat(x) / 1000:.3f}" if f else "nan" for x in ("median", "min", "max")]
        for k in ("first", "restart", "mot"):
            r = ratios.get(f"tree.{n}.{k}_vs_find")
            row += [f"{r.stat(x):.3f}" if r and r.per_round else "nan" for x in ("median", "min", "max")]
        rows.append(" ".join(row))
    drawn = []
    with open(data, "w") as f:
        f.write("# files, then median min max (ms) of: " + ", ".join(k for k, _ in TREE_KINDS) +
                "; then median min max of first/find, restart/find, mot/find\n" + "\n".join(rows) + "\n")
    common = ("set terminal svg size 720,420 dynamic font 'sans,11'\nset logscale x\nset grid\nset key top left\n"
              "set xlabel 'files in the workspace (ten a directory)'\n")
    svg1 = os.path.join(out_dir, stem + "-times.svg")
    if gnuplot(common + f"set output '{svg1}'\nset logscale y\nset ylabel 'ms (median, bars: min to max)'\n"
               f"plot '{data}' u 1:2:3:4 w yerrorlines t 'first call, no cache', "
               f"'' u 1:5:6:7 w yerrorlines t 'first call after a restart', "
               f"'' u 1:8:9:10 w yerrorlines t 'find', "
               f"'' u 1:11:12:13 w yerrorlines t 'masks over time: the next call'\n"):
        drawn.append(svg1)
    svg2 = os.path.join(out_dir, stem + "-ratios.svg")
    if gnuplot(common + f"set output '{svg2}'\nset ylabel 'x find (median, bars: min to max)'\nset yrange [0:*]\n"
               f"plot '{data}' u 1:17:18:19 w yerrorlines t 'first call / find', "
               f"'' u 1:20:21:22 w yerrorlines t 'after a restart / find', "
               f"1.2 w l dt 2 t 'target: first <= 1.2x', 0.3 w l dt 3 t 'target: restart <= 0.3x'\n"):
        drawn.append(svg2)
    os.unlink(data)
    for svg, alt in zip(drawn, ("times against size", "ratios to find against size")):
        w(f"![{alt}]({os.path.basename(svg)})\n")
    if not drawn:
        w("(No plots: gnuplot is missing; scripts/install-deps installs it.)\n")
    w("| files | " + " | ".join(label for _, label in TREE_KINDS) + " | first / find | restart / find |")
    w("|---|" + "---|" * (len(TREE_KINDS) + 2))
    for n in sizes:
        cells = []
        for k, _ in TREE_KINDS:
            f = figs.get(f"tree.{n}.{k}")
            cells.append(f"{fmt(f.stat('median'), 'us')} ({fmt(f.stat('min'), 'us')} - {fmt(f.stat('max'), 'us')})"
                         if f and f.all else "n/a")
        for k in ("first", "restart"):
            r = ratios.get(f"tree.{n}.{k}_vs_find")
            cells.append(f"{fmt(r.stat('median'), 'x')} ({fmt(r.stat('min'), 'x')} - {fmt(r.stat('max'), 'x')})"
                         if r and r.per_round else "n/a")
        w(f"| {n:,} | ".replace(",", " ") + " | ".join(cells) + " |")
    w("")


# Where a warm call's time goes, from probes measured in the same
# interleaved rounds: each stage is a difference of medians (label, the
# figure keys added, the keys subtracted), per client. A stage below zero
# is noise around a stage that costs nothing measurable; it is shown as is.
STAGES = {
    "C": dict(prefix="exec.", total="warm.m0", direct="direct.spawn", floor="relay", rows=[
        ("client encode (pre-encoded request)", [], []),
        ("4 socket hops through a zero-work relay process (client -> relay -> echo -> relay -> client): the floor "
         "of any design with a daemon in front of a worker", ["relay"], []),
        ("daemon: decode, workspace and policy check, audit record, reply (daemon-only call minus the 2-hop echo)",
         ["daemon_only"], ["hop"]),
        ("daemon relaying to the worker and back, worker decode and reply encode, beyond the relay floor (the rest)",
         ["warm.m0", "hop"], ["relay", "daemon_only", "warm.m0.worker"]),
        ("worker exec set-up beyond a platform's own (worker's duration_us minus posix_spawn with pipes)",
         ["warm.m0.worker"], ["direct.pipes"]),
        ("output pipes, read to EOF (posix_spawn with pipes minus without)", ["direct.pipes"], ["direct.spawn"]),
        ("the command itself: direct posix_spawn of /bin/true", ["direct.spawn"], []),
    ]),
    "Python": dict(prefix="client.", total="warm", direct="spawn", floor="relay", rows=[
        ("client encode + decode (json.dumps + json.loads of one call, in-process)", ["codec_term"], []),
        ("4 socket hops through a zero-work relay process (Python throughout): the floor of any design with a "
         "daemon in front of a worker", ["relay"], []),
        ("daemon: decode, workspace and policy check, audit record, reply (daemon-only call minus the 2-hop echo "
         "and the client's JSON work)", ["daemon_only"], ["hop", "codec_term"]),
        ("worker decode and reply encode (the worker alone on a socket pair, minus its exec and the 2-hop echo)",
         ["worker"], ["worker_exec", "hop"]),
        ("daemon: relaying the request to the worker and the reply back, beyond the relay floor (the rest)",
         ["warm", "worker_exec", "hop", "hop"], ["relay", "daemon_only", "warm_worker", "worker"]),
        ("worker exec, all of it (duration_us), less the direct posix_spawn", ["warm_worker"], ["spawn"]),
        ("the command itself: direct os.posix_spawn of /bin/true", ["spawn"], []),
    ]),
}

# file_read of 4 KiB against the same floor (a request-sized message out, a
# 4 KiB reply back through a zero-work relay) and a direct read, per client:
# (prefix, raw call, text call, relay floor, direct read, the client's own
# JSON work raw and text, or None where the client has no such probe).
READ_STAGES = {
    "C": ("files.", "read.4k.raw", "read.4k", "relay.4k", "direct.read.4k", ("client.read.4k.raw", "client.read.4k")),
    "Python": ("client.", "read_raw", "read_text", "relay_read", "read_direct", None),
}


def target_table(w, title, targets, figs, ratios, values):
    w(f"## {title}\n")
    floors = any(t.get("floor") for t in targets)
    w("| target | measured | verdict |" + (" floor of the design, same run |" if floors else ""))
    w("|---|---|---|" + ("---|" if floors else ""))
    met = 0
    for t in targets:
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
        fl = floor_of(t, figs, values)
        cell = ""
        if floors and fl is not None:
            fok = {"<=": fl <= t["limit"], "<": fl < t["limit"], ">=": fl >= t["limit"]}[t["op"]]
            cell = f" {fmt(fl, t['unit'])}: {t['floor_text']}{'' if fok else ' (misses the target by itself)'} |"
        elif floors:
            cell = " |"
        w(f"| {t['text']} | {fmt(v, t['unit'])} | {verdict} |{cell}")
    w(f"\n{met} of {len(targets)} targets met.\n")
    return met


def stage_table(w, figs):
    w("## Where a warm call's time goes (per stage)\n")
    w("Differences of medians of probes measured in the same interleaved rounds as the call itself (`make bench`; "
      "the probes are in `bench/bench-exec.c` and `bench/bench-client.py`): a socket round trip to a process that "
      "echoes a request-sized line with a reply-sized one (two hops, as client -> daemon -> client), a request the "
      "daemon answers by itself after decoding it and checking the workspace's policy and protected paths "
      "(`bad_request` from the argument decoding, audit record written), the worker's own `duration_us` (from "
      "before its clone to the reply being built: pipes, clone, exec, wait, drain), and the direct paths with "
      "and without output pipes; and the floor of the design: a request-sized message through a zero-work relay "
      "process to an echo and back (4 hops, as client -> daemon -> worker -> daemon -> client). Each row is a "
      "difference, so the rows add up to the call by construction; "
      "a row near zero or negative is below the noise.\n")
    for client, st in STAGES.items():
        p = st["prefix"]
        need = {k for _, a, b in st["rows"] for k in a + b} | {st["total"]}
        if not all(p + k in figs for k in need):
            continue
        med = {k: figs[p + k].stat("median") for k in need}
        w(f"| {client} client: warm sandboxed `terminal` of /bin/true | median |")
        w("|---|---|")
        for label, add, sub in st["rows"]:
            w(f"| {label} | {fmt(sum(med[k] for k in add) - sum(med[k] for k in sub), 'us')} |")
        w(f"| **the call, end to end** | **{fmt(med[st['total']], 'us')}** |\n")
        if p + st["direct"] in figs and p + st["floor"] in figs:
            over = med[st["total"]] - figs[p + st["direct"]].stat("median")
            floor = figs[p + st["floor"]].stat("median")
            w(f"Overhead over the direct path ({client} client): {fmt(over, 'us')}; of it the 4-hop relay floor "
              f"{fmt(floor, 'us')} ({100 * floor / over:.0f} %), the daemon's and the worker's own work "
              f"{fmt(over - floor, 'us')}.\n" if over > 0 else
              f"Overhead over the direct path ({client} client): {fmt(over, 'us')} (below the noise).\n")
            direct = figs[p + st["direct"]].stat("median")
            w(f"A design whose replies skipped the daemon (3 hops, and without the checks the daemon makes after the command: the analysis below says why neither requests nor replies can) "
              f"would still pay three quarters of that relay: ({fmt(direct, 'us')} + {fmt(0.75 * floor, 'us')}) / "
              f"{fmt(direct, 'us')} = {(direct + 0.75 * floor) / direct:.2f}x of the direct path ({client} client, "
              f"medians of this run).\n")
    for client, (p, raw, text, floor, direct, codec) in READ_STAGES.items():
        keys = [p + k for k in (raw, text, floor, direct)]
        if not all(k in figs for k in keys):
            continue
        mraw, mtext, mfloor, mdirect = (figs[k].stat("median") for k in keys)
        craw = ctext = 0.0
        if codec and all(p + k in figs for k in codec):
            craw, ctext = (figs[p + k].stat("median") for k in codec)
        w(f"| {client} client: `file_read` of 4 KiB | raw (`binary`) | text |")
        w("|---|---|---|")
        if codec:
            w(f"| the client's own JSON work: the request encoded, the reply decoded (jansson, measured without a socket) "
              f"| {fmt(craw, 'us')} | {fmt(ctext, 'us')} |")
        w(f"| 4 socket hops through a zero-work relay process, a 4 KiB reply's sizes (the floor) | {fmt(mfloor, 'us')} "
          f"| {fmt(mfloor, 'us')} |")
        w(f"| the read itself: direct open+read+close | {fmt(mdirect, 'us')} | {fmt(mdirect, 'us')} |")
        w(f"| the daemon's and the worker's own work (the rest: decode, checks, audit, encode, relay) | "
          f"{fmt(mraw - mfloor - mdirect - craw, 'us')} | {fmt(mtext - mfloor - mdirect - ctext, 'us')} |")
        w(f"| **the call, end to end** | **{fmt(mraw, 'us')}** | **{fmt(mtext, 'us')}** |\n")


PIECES = (("bwrap", "bwrap, outer (its monitor; pid 1 of the jail's outer pid namespace)"),
          ("worker", "worker (pid 1 of the jail)"))


def pieces_table(w, figs, values):
    """bench-memory's per-piece figures: what one idle workspace costs, by
    process, in the kernel and in the daemon, and what its start costs."""
    if "memory.worker.pss" not in values:
        return
    w("## Where an idle workspace's memory and start-up go (per piece)\n")
    w("From `bench/bench-memory.c` (the same run as the memory figures): medians over the jails, per workspace. "
      "PSS and private memory from each process's `smaps_rollup`, page tables from its `VmPTE`, CPU time to start "
      "from `schedstat` (every thread, plus reaped children; the worker's row includes the inner bwrap's "
      "namespace and mount set-up, which becomes the worker by exec, and the one `/bin/true` each workspace ran). "
      "The daemon's row is its PSS growth and CPU time divided by the workspaces.\n")
    w("| piece | PSS | private | page tables | CPU time to start |")
    w("|---|---|---|---|---|")
    for key, label in PIECES:
        if f"memory.{key}.pss" in values:
            w(f"| {label} | {fmt(values[f'memory.{key}.pss'], 'kB')} | {fmt(values[f'memory.{key}.private'], 'kB')} | "
              f"{fmt(values[f'memory.{key}.pagetables'], 'kB')} | {fmt(values[f'memory.{key}.start_cpu'], 'us')} |")
    w(f"| the daemon's own state | {fmt(values.get('memory.daemon_per_ws'), 'kB')} | | | "
      f"{fmt(values.get('memory.daemon.start_cpu'), 'us')} |")
    w("")
    w("| kernel, per workspace (/proc/meminfo deltas) | kB |")
    w("|---|---|")
    for key, label in (("slab", "slab"), ("sunreclaim", "  of which unreclaimable"),
                       ("pagetables", "page tables (all processes)"), ("kstack", "kernel stacks")):
        if f"memory.kernel.{key}" in values:
            w(f"| {label} | {fmt(values[f'memory.kernel.{key}'], 'kB')} |")
    if "memory.inotify_watches_per_ws" in values:
        w(f"| (the daemon's inotify watches per workspace: {values['memory.inotify_watches_per_ws']:.1f}) | |")
    slabs = sorted(((v, k[len("memory.slab."):]) for k, v in values.items() if k.startswith("memory.slab.")),
                   reverse=True)
    for v, name in slabs:
        w(f"| slab cache `{name}` | {fmt(v, 'kB')} |")
    w("")
    rows = [("the project's idle workspace: its jail's cgroup, plus the daemon's own growth",
             "memory.charged_per_ws_kb", "memory.machine_per_ws_kb"),
            ("floor: a bare bwrap jail started as the daemon starts it (own pid namespace and /proc)",
             "memory.floor_ns.charged_per_jail_kb", "memory.floor_ns.machine_per_jail_kb"),
            ("floor: a bare bwrap jail", "memory.floor.charged_per_jail_kb", "memory.floor.machine_per_jail_kb")]
    if any(values.get(c) is not None for _, c, _ in rows):
        w("| per workspace or jail, 1 000 of them | charged to its memory cgroup (median) | machine delta |")
        w("|---|---|---|")
        for label, c, m in rows:
            if values.get(c) is not None or values.get(m) is not None:
                w(f"| {label} | {fmt(values.get(c), 'kB')} | {fmt(values.get(m), 'kB')} |")
        w("")
        w("The cgroup charge counts live objects (the jail's pages, and the kernel memory the kernel accounts to "
          "the group: its namespaces' and mounts' slab objects, page tables, kernel stacks), whatever ran before; "
          "it leaves out kernel memory the kernel does not account to a group and the slab pages' slack. The "
          "machine delta counts everything, but a phase reuses slab pages an earlier one freed: each of the three "
          "is measured first, in a run of its own, after the slab caches were shrunk.\n")
    ns = [(k[len("memory.ns."):], f) for k, f in figs.items() if k.startswith("memory.ns.")]
    if ns:
        w("| one namespace of each kind by itself (kernel memory, beside a child that unshares nothing) | kB |")
        w("|---|---|")
        for name, f in ns:
            w(f"| {name} | {fmt(f.stat('median'), 'kB')} |")
        w("")


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
    w("- Clients: each benchmark in C talks to `vectora-sandboxd`'s socket directly over one persistent connection "
      "(requests pre-encoded); `bench/bench-client.py` does the same from Python's standard library, encoding and "
      "decoding every call, as an agent platform in Python does. No CLI start-up in any figure; the daemon runs "
      "with `--audit-log` on, as deployed.")
    w("- Direct paths: `posix_spawn` (glibc: clone(CLONE_VM|CLONE_VFORK) inside; Python's `os.posix_spawn`) and a "
      "vfork-style clone+execve as the worker uses; fork+exec is shown for reference only. Ratios are against "
      "`posix_spawn`" + ("; in this run the vfork-style clone was faster and the row naming it says so"
                         if values.get("exec.best_is_vfork") else
                         ", which was also the faster of the two in this run") + ".\n")

    met = target_table(w, "Targets (issue 15, against the honest baselines)", TARGETS_15, figs, ratios, values)
    met += target_table(w, "Other targets (issue 6)", TARGETS_6, figs, ratios, values)
    if "tree.sizes" in values:
        start = next(t for t in TARGETS_29 if t["ref"] == "memory.start_1000_s")
        a_s, f_s = values.get("memory.start_1000_s"), floor_of(start, figs, values)
        if a_s and f_s:
            values["memory.start_1000_vs_floor"] = a_s / f_s
        met += target_table(w, "Workspace-size targets (issue 29)", TARGETS_29, figs, ratios, values)
        w("Shown by tests instead of figures (`make test`, as root and as an ordinary user):\n")
        for t in TESTED_29:
            w(f"- {t}")
        w("")
    stage_table(w, figs)
    pieces_table(w, figs, values)
    tree_page(w, figs, ratios, values, os.path.dirname(os.path.abspath(a.out)))

    if a.analysis and os.path.exists(a.analysis):
        with open(a.analysis) as f:
            w(f.read().rstrip() + "\n")

    titles = {"exec": "1. Warm exec", "files": "2. File operations", "cold": "3. Cold start",
              "memory": "4. Memory", "memory-bare": "4a. Memory floor: bare bwrap jails (a run of its own)",
              "memory-ns": "4b. Memory floor: bare bwrap jails started as the daemon starts them (a run of its own)",
              "scale": "5. Scale", "network": "6. Network allowlist: a download through the proxy",
              "https": "6a. Secrets: HTTPS intercepted at the proxy beside a plain tunnel",
              "client": "7. A Python client (standard library)",
              "tree": "8. Workspace size (all figures; the scale page above draws them)"}
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
    n_targets = len(TARGETS_15) + len(TARGETS_6) + (len(TARGETS_29) if "tree.sizes" in values else 0)
    print(f"wrote {a.out}: {met} of {n_targets} targets met", file=sys.stderr)


if __name__ == "__main__":
    main()
