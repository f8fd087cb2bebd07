#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""No call cycle among the daemon's files: from the symbols each object of
vectora-sandboxd defines and uses (nm), which file calls which; a cycle is a
set of files that cannot be read, tested or changed one at a time.

The daemon has none: a lower object (the worker link, the workspace)
reaches its owner only through the ops or hooks the owner gives it
(LinkOps, WorkspaceHooks, ServerHandlers, WatchHooks); this fails on any
call edge inside a cycle, naming a symbol that closes it. TAP."""
import collections
import glob
import os
import subprocess
import sys
import tempfile


def symbols(obj):
    out = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and f[1] in "TDBR":
            defined.add(f[2])
        elif len(f) == 2 and f[0] == "U":
            used.add(f[1])
    return defined, used


def sccs(nodes, edges):
    """Tarjan: the strongly connected components with more than one file."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def calls(objs):
    """Each object's name (file without .c.o), the files each calls (a
    function or a table it names), and one symbol per edge."""
    defs, uses = {}, {}
    for o in objs:
        name = os.path.basename(o)[:-len(".c.o")]
        defs[name], uses[name] = symbols(o)
    owner = {s: f for f, d in defs.items() for s in d}
    edges = collections.defaultdict(set)
    why = {}
    for f, u in uses.items():
        for s in u:
            g = owner.get(s)
            if g and g != f:
                edges[f].add(g)
                why.setdefault((f, g), s)
    return defs, edges, why


def cyclic_edges(defs, edges):
    cyclic = set()
    for comp in sccs(defs.keys(), edges):
        cyclic |= {(f, g) for f in comp for g in edges[f] if g in comp}
    return cyclic


def self_test():
    """The check itself finds a cycle: a -> b -> a, and c -> a outside it."""
    srcs = {"a": "void b(void); void a(void); void a(void) { b(); }\n",
            "b": "void a(void); void b(void); void b(void) { a(); }\n",
            "c": "void a(void); void c(void); void c(void) { a(); }\n"}
    with tempfile.TemporaryDirectory() as d:
        for name, text in srcs.items():
            with open(os.path.join(d, name + ".c"), "w") as f:
                f.write(text)
            subprocess.run([os.environ.get("CC", "cc"), "-c", "-o", os.path.join(d, name + ".c.o"),
                            os.path.join(d, name + ".c")], check=True)
        defs, edges, _ = calls(sorted(glob.glob(os.path.join(d, "*.c.o"))))
        return cyclic_edges(defs, edges)


def main():
    # The daemon's objects: its internal library's and main.c's (one
    # directory each), or one directory holding them all.
    objdirs = sys.argv[1:]
    objdir = " ".join(objdirs)
    objs = sorted(o for d in objdirs for o in glob.glob(os.path.join(d, "*.c.o")))
    n = 0
    failed = 0

    def check(name, ok, detail=""):
        nonlocal n, failed
        n += 1
        failed += not ok
        print("%s %d - %s%s" % ("ok" if ok else "not ok", n, name, "" if ok else "  # " + detail))

    found = self_test()
    check("the check finds a cycle in objects made to have one", found == {("a", "b"), ("b", "a")}, str(found))
    check("the daemon's objects were found", len(objs) >= 10, objdir)
    defs, edges, why = calls(objs)
    check("calls between the daemon's files were found", sum(len(e) for e in edges.values()) >= 10)
    cyclic = cyclic_edges(defs, edges)
    for e in sorted(cyclic):
        check("no call cycle: %s -> %s" % e, False,
              "%s calls %s() of %s, and %s reaches back to %s" % (e[0], why[e], e[1], e[1], e[0]))
    check("no call edge inside a cycle", not cyclic)
    print("# %d call edges among %d files" % (sum(len(e) for e in edges.values()), len(defs)))
    print("1..%d" % n)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
