#!/usr/bin/env python3
"""The TypeScript client (clients/typescript, issue 30 item 6) against a real
vectora-sandboxd: the package builds with tsc from its pinned
devDependencies (installed by scripts/install-deps, else here by `npm ci`
from the lockfile), `npm pack` makes a package with types and no runtime
dependency that installs offline, a consumer written in strict TypeScript
type-checks against it, and clients/typescript/test/smoke.mjs drives the
daemon through it: every tool, the result fields, concurrent calls,
timeouts and AbortSignals that end the command (a marker file it would
write never appears), requireSandbox. Skips loudly without node/npm. TAP
output."""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
from vtest import ROOT, SRC, Daemon, Tap, chown_tree, make_ws  # noqa: E402
import tempfile  # noqa: E402

tap = Tap()
PKG = os.path.join(SRC, "clients/typescript")
SANDBOX = "[sandbox]\nenabled = true\n"
CONSUMER = """import { Sandbox, SandboxError, CallTimeout, ErrorCode, TerminalResult, SandboxInfo } from "vectora-sandbox";

async function main(): Promise<void> {
  const sb = new Sandbox({ workspace: "/tmp", timeoutMs: 1000, requireSandbox: true });
  const r: TerminalResult = await sb.terminal(["echo", "hi"], { timeout: 5, env: { A: "1" } });
  const info: SandboxInfo = r.sandbox;
  const hosts: string[] = info.networkDenied.map((d) => d.host);
  const n: number = (await sb.grep("x", { context: 1 })).matchCount;
  const first: number | null = (await sb.fileRead("f", { startLine: 1, maxLines: 2 })).startLine;
  try { await sb.listDir(); } catch (e) {
    if (e instanceof CallTimeout && e.confirmed) console.log(e.code === ErrorCode.CANCELLED);
    if (e instanceof SandboxError) console.log(e.code, hosts, n, first);
  }
  sb.close();
}
main();
"""


def run(argv, cwd, timeout=300, env=None):
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


def main():
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        tap.skip("typescript client", "node and npm are needed (apt-get install nodejs npm; scripts/install-deps)")
        return tap.finish()
    tmp = tempfile.mkdtemp(prefix="vs-ts-", dir="/var/tmp")
    os.chmod(tmp, 0o755)
    try:
        cases(tmp, npm)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return tap.finish()


def cases(tmp, npm):
    # A copy of the package, its devDependencies from install-deps's
    # node_modules when present, else from the lockfile.
    src = os.path.join(tmp, "pkg")
    shutil.copytree(PKG, src, ignore=shutil.ignore_patterns("node_modules", "dist", "*.tgz"))
    have = os.path.join(PKG, "node_modules/typescript/bin/tsc")
    if os.path.exists(have):
        shutil.copytree(os.path.join(PKG, "node_modules"), os.path.join(src, "node_modules"), symlinks=True)
    else:
        r = run([npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"], src, timeout=600)
        if r.returncode:
            tap.skip("typescript client", "its devDependencies are not installed (scripts/install-deps) and npm ci "
                     "failed (offline?): " + (r.stderr or r.stdout)[-300:])
            return
    r = run([npm, "run", "--silent", "build"], src)
    tap.ok("the package builds with tsc (strict, declarations)", r.returncode == 0 and
           os.path.exists(os.path.join(src, "dist/index.d.ts")), r.stdout + r.stderr)
    meta = json.load(open(os.path.join(src, "package.json")))
    tap.ok("no runtime dependencies, types declared", not meta.get("dependencies") and meta.get("types") ==
           "dist/index.d.ts", meta)
    r = run([npm, "pack", "--silent", "--pack-destination", tmp], src)
    tgz = os.path.join(tmp, (r.stdout.strip().splitlines() or ["?"])[-1])
    tap.ok("npm pack makes the package", r.returncode == 0 and os.path.exists(tgz), r.stdout + r.stderr)
    proj = os.path.join(tmp, "consumer")
    os.makedirs(proj)
    with open(os.path.join(proj, "package.json"), "w") as f:
        json.dump({"name": "consumer", "version": "1.0.0", "private": True}, f)
    r = run([npm, "install", "--offline", "--no-audit", "--no-fund", "--loglevel=error", tgz], proj)
    installed = os.path.join(proj, "node_modules/vectora-sandbox")
    tap.ok("it installs offline (nothing else is pulled in)", r.returncode == 0 and
           sorted(os.listdir(os.path.join(proj, "node_modules"))) in (["vectora-sandbox"],
                                                                       [".package-lock.json", "vectora-sandbox"]),
           r.stdout + r.stderr)
    with open(os.path.join(proj, "consumer.ts"), "w") as f:
        f.write(CONSUMER)
    tsc = os.path.join(src, "node_modules/typescript/bin/tsc")
    r = run(["node", tsc, "--strict", "--noEmit", "--module", "commonjs", "--target", "es2020", "--types", "node",
             "--typeRoots", os.path.join(src, "node_modules/@types"), "consumer.ts"], proj)
    tap.ok("a strict TypeScript consumer type-checks against the installed types", r.returncode == 0,
           r.stdout + r.stderr)
    if not os.path.isdir(installed):
        return

    ws = make_ws(tmp, "ws", SANDBOX + 'mask = [".env"]\n', {".env": "SECRET=1\n"})
    plain = make_ws(tmp, "plain", None, {})
    netws = make_ws(tmp, "net", SANDBOX + 'network = ["allowed.test"]\n[sandbox.limits]\ntimeout = 5\n', {})
    lines = "".join("line %d\n" % i for i in range(1, 21))
    linesws = make_ws(tmp, "lines", SANDBOX + 'mask = [".env"]\n',
                      {"a.ts": "const a = 1;\n// TODO one\n", "sub/b.ts": "let b;\n// TODO two\n",
                       "notes.txt": lines, ".env": "TODO hidden\n", "euro.txt": "\u20ac" * 1000 + "\n"})
    # More workspaces than one status page holds (100): refused configs,
    # entries without a worker.
    many = []
    for i in range(150):
        many.append(make_ws(tmp, "many/w%03d" % i, "[sandbox]\nbogus = 1\n", {}))
    for d in (ws, plain, netws, linesws, os.path.join(tmp, "many")):
        chown_tree(d)
    with Daemon(tmp, "ts") as d:
        env = dict(os.environ)
        env.pop("VECTORA_SANDBOX_SOCKET", None)
        expect = "/run/vectora-sandbox.sock" if ROOT else default_user_socket(env)
        cfg = {"socket": d.sock, "ws": ws, "plain": plain, "netws": netws, "linesws": linesws, "many": many, "project": proj,
               "expect_default_socket": expect}
        r = run(["node", os.path.join(src, "test/smoke.mjs"), json.dumps(cfg)], proj, timeout=240, env=env)
        seen = 0
        for line in r.stdout.splitlines():
            try:
                c = json.loads(line)
            except ValueError:
                continue
            seen += 1
            tap.ok("ts: " + c["name"], c["ok"], c.get("detail"))
            if c["ok"] and isinstance(c.get("detail"), str):
                tap.note("ts: %s: %s" % (c["name"], c["detail"]))  # what it measured
        tap.ok("the node script ran every check", r.returncode == 0 and seen == 12, r.stderr[-2000:])


def default_user_socket(env):
    xdg = env.get("XDG_RUNTIME_DIR")
    if xdg and xdg.startswith("/") and os.path.isdir(xdg) and os.stat(xdg).st_uid == os.geteuid():
        return os.path.join(xdg, "vectora-sandbox.sock")
    return "/tmp/vectora-sandbox-%d/sock" % os.geteuid()


if __name__ == "__main__":
    sys.exit(main())
