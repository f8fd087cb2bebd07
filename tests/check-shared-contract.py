#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""src/shared is what the worker and the host must agree on, and nothing
else (issue 27): every object of the shared library is linked into the
worker (some symbol it defines is in the worker), so host-only code (the
TOML parser, the policy's validation, the backend table, the renderers of
backends the worker never plans) cannot settle there again unnoticed.

Usage: check-shared-contract.py LIBSHARED.a VECTORA_WORKER. TAP."""
import os
import subprocess
import sys
import tempfile


def defined(path):
    out = subprocess.run(["nm", "--defined-only", path], capture_output=True, text=True, check=True).stdout
    return {f[2] for f in (l.split() for l in out.splitlines()) if len(f) == 3 and f[1] in "TDBR"}


def main():
    lib, worker = sys.argv[1], sys.argv[2]
    in_worker = defined(worker)
    members = subprocess.run(["ar", "t", lib], capture_output=True, text=True, check=True).stdout.split()
    n = 0
    failed = 0
    with tempfile.TemporaryDirectory() as d:
        for m in members:
            obj = os.path.join(d, "o.o")
            with open(obj, "wb") as f:
                f.write(subprocess.run(["ar", "p", lib, m], capture_output=True, check=True).stdout)
            syms = defined(obj)
            name = os.path.basename(m)[:-len(".c.o")].split("_", 1)[-1]
            n += 1
            ok = bool(syms & in_worker)
            failed += not ok
            print("%s %d - shared's %s is the worker's too%s" % (
                "ok" if ok else "not ok", n, name,
                "" if ok else "  # none of its %d symbols is linked into the worker: host-only code belongs in src/core" % len(syms)))
    n += 1
    ok = len(members) >= 15
    failed += not ok
    print("%s %d - the shared library was read (%d objects)" % ("ok" if ok else "not ok", n, len(members)))
    print("1..%d" % n)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
