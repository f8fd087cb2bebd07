#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Host-side code never follows a path the agent shaped (issue 25): every
system call that takes a path (open, stat, realpath, mkdir, ...) in the
host's layers (src/shared, src/core, src/daemon, src/cli) is either in
src/basic/chase.c, the one resolver, or listed in tests/path-calls.txt by
file, function and call, with the reason the jail cannot write what it
names (docs/threat-model.md, "Host-side paths"). A new call, or one more of
a listed kind in the same function, fails this test until it is listed with
its reason or moved to the resolver.

  check-path-calls.py SRC_ROOT            the check (TAP)
  check-path-calls.py SRC_ROOT --list     the calls as they are, in the list's format
"""
import collections
import os
import re
import sys

LAYERS = ("src/shared", "src/core", "src/daemon", "src/cli", "src/proxy")
CALLS = ("realpath", "stat", "lstat", "open", "opendir", "fopen", "mkdir", "unlink", "rmdir", "rename", "chown",
         "lchown", "chmod", "access", "readlink", "symlink", "link", "truncate", "creat", "mkfifo", "mknod",
         "statfs", "statvfs", "mkostemp", "mkstemp", "mkdtemp", "utimes", "utime", "chdir", "execv", "execvp",
         "remove", "scandir", "nftw", "ftw", "glob", "bind", "connect")
# openat(AT_FDCWD, ...) and friends resolve from the working directory: a path call too.
ATCALLS = ("openat", "fstatat", "mkdirat", "unlinkat", "renameat", "readlinkat", "fchownat", "fchmodat",
           "faccessat", "symlinkat", "linkat", "utimensat", "open_tree", "move_mount", "mount")
CALL_RE = re.compile(r"(?<![\w.>])(%s)\s*\(" % "|".join(CALLS))
AT_RE = re.compile(r"(?<![\w.>])(%s)\s*\(\s*AT_FDCWD" % "|".join(ATCALLS))
SYSCALL_AT_RE = re.compile(r"syscall\s*\(\s*SYS_(\w+)\s*,\s*AT_FDCWD")
FUNC_RE = re.compile(r"^[A-Za-z_][\w\s\*]*?\b(\w+)\s*\([^;]*$")


def strip_comments_and_strings(text):
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text[i] == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""')
            i = j + 1
        elif text[i] == "'":
            j = i + 1
            while j < n and text[j] != "'":
                j += 2 if text[j] == "\\" else 1
            out.append("' '")
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def calls_in(root):
    found = collections.Counter()
    for layer in LAYERS:
        names = []
        for d, _, files in os.walk(os.path.join(root, layer)):
            names += [os.path.relpath(os.path.join(d, n), root) for n in files if n.endswith(".c")]
        for rel in sorted(names):
            text = strip_comments_and_strings(open(os.path.join(root, rel), encoding="utf-8").read())
            func = "(file)"
            for line in text.split("\n"):
                if line and not line[0].isspace() and line[0] not in "#}{" and "(" in line:
                    m = FUNC_RE.match(line)
                    if m and not line.rstrip().endswith(";"):
                        func = m.group(1)
                for m in CALL_RE.finditer(line):
                    found[(rel, func, m.group(1))] += 1
                for m in AT_RE.finditer(line):
                    found[(rel, func, m.group(1) + "@cwd")] += 1
                for m in SYSCALL_AT_RE.finditer(line):
                    found[(rel, func, m.group(1) + "@cwd")] += 1
    return found


def read_list(path):
    listed = {}
    for n, line in enumerate(open(path, encoding="utf-8"), 1):
        line = line.rstrip("\n")
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split(None, 4)
        if len(parts) < 5 or not parts[3].isdigit():
            raise SystemExit("%s:%d: want FILE FUNCTION CALL COUNT REASON" % (path, n))
        listed[(parts[0], parts[1], parts[2])] = (int(parts[3]), parts[4])
    return listed


def main():
    root = sys.argv[1]
    found = calls_in(root)
    if "--list" in sys.argv:
        for (f, fn, c), k in sorted(found.items()):
            print("%s %s %s %d REASON" % (f, fn, c, k))
        return 0
    listed = read_list(os.path.join(root, "tests/path-calls.txt"))
    n = 0
    failed = 0
    for key, k in sorted(found.items()):
        n += 1
        want = listed.get(key)
        ok = want is not None and k <= want[0] and len(want[1]) >= 8
        if not ok:
            failed += 1
            print("not ok %d - %s %s: %s x%d is not in tests/path-calls.txt%s: resolve it with src/basic/chase.h, "
                  "or list it with the reason the jail cannot write what it names" %
                  (n, key[0], key[1], key[2], k, "" if want is None else " (listed x%d)" % want[0]))
        else:
            print("ok %d - %s %s: %s x%d (%s)" % (n, key[0], key[1], key[2], k, want[1][:60]))
    for key in sorted(set(listed) - set(found)):
        n += 1
        print("ok %d - %s %s: %s listed but gone (drop it from the list) # SKIP stale entry" % (n, *key))
    print("1..%d" % n)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
