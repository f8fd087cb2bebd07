#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What the architecture says exists once, exists once (issue 27): the
patterns of a policy are compiled in one place (shared/plan/policy-sets.c; the
worker, the jail's side, compiles what its init carries), one plan builder
makes every jail plan (jail_plan_make in shared/plan/jail-facts.c), and backend
kinds are named only in the backend table (backend-list.h and its two
expansions). A call added anywhere else fails, naming it. TAP.

Usage: check-one-place.py SRC_ROOT"""
import os
import re
import sys

RULES = [
    # (what, pattern, the files where it may stand)
    ("the policy's patterns are compiled in one place", r"\bmask_set_compile\(",
     {"src/shared/plan/mask-walk.c", "src/shared/plan/mask-walk.h", "src/shared/plan/policy-sets.c", "src/worker/resolve.c"}),
    ("one plan builder: the facts are collected only by jail_plan_make", r"\bjail_facts_collect\(",
     {"src/shared/plan/jail-facts.c", "src/shared/plan/jail-plan.h"}),
    ("one plan builder: a plan is built only by jail_plan_make", r"\bjail_plan_build\(",
     {"src/shared/plan/jail-plan.c", "src/shared/plan/jail-facts.c", "src/shared/plan/jail-plan.h"}),
    ("backend kinds are named only in the backend table", r"\bVS_BACKEND_",
     {"src/core/backends/backend-list.h", "src/core/backends/backend.c", "src/core/backends/backend-ops.c"}),
]


def strip_comments(text):
    return re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)


def offenders(files, pattern, allowed):
    out = []
    for rel, text in files.items():
        if rel in allowed:
            continue
        for n, line in enumerate(strip_comments(text).split("\n"), 1):
            if re.search(pattern, line):
                out.append("%s:%d: %s" % (rel, n, line.strip()))
    return out


def main():
    root = sys.argv[1]
    files = {}
    for d, _, names in os.walk(os.path.join(root, "src")):
        for name in names:
            if name.endswith((".c", ".h")):
                p = os.path.join(d, name)
                with open(p, errors="replace") as f:
                    files[os.path.relpath(p, root)] = f.read()
    n = failed = 0

    def check(name, ok, detail=""):
        nonlocal n, failed
        n += 1
        failed += not ok
        print("%s %d - %s%s" % ("ok" if ok else "not ok", n, name, "" if ok else "  # " + detail))

    check("the sources were found", len(files) > 100, root)
    # The check itself: a call planted outside its place is found; one in a
    # comment is not.
    planted = {"src/core/x.c": "/* mask_set_compile(a) */\nint f(void) { return mask_set_compile(a, b, c, d); }\n"}
    found = offenders(planted, RULES[0][1], RULES[0][2])
    check("the check finds a call planted outside its place (and not one in a comment)",
          found == ["src/core/x.c:2: int f(void) { return mask_set_compile(a, b, c, d); }"], str(found))
    for what, pattern, allowed in RULES:
        bad = offenders(files, pattern, allowed)
        check(what, not bad, "; ".join(bad[:5]))
    print("1..%d" % n)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
