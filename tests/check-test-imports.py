#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""No test module imports another test module: what tests share lives in
tests/lib/ (vtest.py, vdaemon.py). A test that imports another runs that
one's module-level code, and a change to one test's helper silently changes
another test. TAP, one line per Python file under tests/.

  check-test-imports.py SRC_ROOT
"""
import ast
import os
import sys

root = os.path.join(sys.argv[1], "tests")
files = []
for d, _, names in os.walk(root):
    files += [os.path.join(d, n) for n in sorted(names) if n.endswith(".py")]
# Test modules: everything under tests/ that is not the shared library or a
# helper the tests run or import on purpose.
shared = (os.path.join(root, "lib") + os.sep, os.path.join(root, "helpers") + os.sep)
tests = {os.path.splitext(os.path.basename(f))[0] for f in files if not f.startswith(shared)}
failed = 0
print("1..%d" % len(files))
for i, f in enumerate(files, 1):
    with open(f) as fh:
        tree = ast.parse(fh.read(), f)
    bad = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            bad |= {a.name.split(".")[0] for a in node.names} & tests
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            bad |= {node.module.split(".")[0]} & tests
    rel = os.path.relpath(f, sys.argv[1])
    if bad:
        failed += 1
        print("not ok %d - %s imports the test module(s) %s: move what they share to tests/lib/" %
              (i, rel, ", ".join(sorted(bad))))
    else:
        print("ok %d - %s" % (i, rel))
sys.exit(1 if failed else 0)
