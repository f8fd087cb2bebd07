#!/usr/bin/env python3
"""A file changed by another writer between an edit's read and its write is
never overwritten (docs/mcp.md, "multi_edit and apply_patch"; docs/protocol.md,
write_file's if_sha256). The other writer is the host: an inotify watch on
the file wakes it the moment the jail's worker closes the file after reading
it, and it appends a line, while the call computes its change and before
its write (the window is widened with a large file the call handles in
between). Each round then looks at the result and the file:

- refused (precondition_failed, "changed since this call read it", no file
  changed): the file holds the other writer's line and not the edit;
- done: the file holds both (the other writer came after the write);
- done and the other writer's line is gone: the lost update this prevents.

multi_edit, apply_patch over three files (the raced one second: the write
of the first is undone) and file_edit (the core re-reads and re-applies:
both land), through the daemon and embedded. Before the fix multi_edit and
apply_patch lost the line. TAP output."""
import ctypes
import json
import os
import struct
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../lib"))
from vtest import Daemon, Tap, check, make_ws, run_cases  # noqa: E402
from vmcp import Mcp  # noqa: E402

tap = Tap()
SANDBOX = "[sandbox]\nenabled = true\n"
ROUNDS = 6
OTHER = "appended by the other writer\n"
BIG = "".join("line %06d of a large file\n" % i for i in range(60000))  # ~1.6 MB

IN_MODIFY = 0x2
IN_CLOSE_NOWRITE = 0x10
libc = ctypes.CDLL(None, use_errno=True)


class OtherWriter:
    """Appends OTHER to path once: as soon as something closes it after
    reading it (the edit's read through the jail), or with during_write as
    soon as the worker writes the temporary file that is to replace it (the
    write has begun: its precondition must still be looked at after this)."""

    def __init__(self, path, during_write=False):
        self.fd = libc.inotify_init1(os.O_CLOEXEC)
        check(self.fd >= 0, "inotify_init1: errno %d" % ctypes.get_errno())
        watch = (os.path.dirname(path), IN_MODIFY) if during_write else (path, IN_CLOSE_NOWRITE)
        check(libc.inotify_add_watch(self.fd, watch[0].encode(), watch[1]) >= 0,
              "inotify_add_watch: errno %d" % ctypes.get_errno())
        self.path = path
        self.during_write = during_write
        self.t = threading.Thread(target=self.run, daemon=True)
        self.t.start()

    def wait(self):
        while True:
            buf = os.read(self.fd, 65536)
            if not self.during_write:
                return
            i = 0
            while i + 16 <= len(buf):
                n = struct.unpack_from("iIII", buf, i)[3]
                name = buf[i + 16:i + 16 + n].split(b"\0")[0]
                # "#INODE": the temporary file written through its
                # O_TMPFILE descriptor (inotify names it so).
                if name.startswith(b".vectora-tmp-") or name.startswith(b"#"):
                    return
                i += 16 + n

    def run(self):
        try:
            self.wait()
        except OSError:
            return
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        os.write(fd, OTHER.encode())
        os.close(fd)

    def done(self):
        self.t.join(10)
        os.close(self.fd)


def host(ws, name):
    try:
        with open(os.path.join(ws, name)) as f:
            return f.read()
    except FileNotFoundError:
        return None


def put(ws, name, text):
    p = os.path.join(ws, name)
    if text is None:
        if os.path.exists(p):
            os.unlink(p)
        return
    with open(p, "w") as f:
        f.write(text)
    st = os.stat(ws)
    os.chown(p, st.st_uid, st.st_gid)


def outcome(r):
    res = r.get("result", {})
    text = "".join(b.get("text", "") for b in res.get("content", []))
    return bool(res.get("isError")), text


def race(ws, m, tool, args, files, raced, edited_mark, during_write=False):
    """ROUNDS rounds of tool(args) with the other writer on raced; files:
    {name: content} set before each round. Counts of refused, done before
    the other writer, lost."""
    counts = {"refused": 0, "after": 0, "lost": 0, "retried": 0}
    for _ in range(ROUNDS):
        for k, v in files.items():
            put(ws, k, v)
        w = OtherWriter(os.path.join(ws, raced), during_write)
        r = m.call(tool, **args)
        w.done()
        err, text = outcome(r)
        now = host(ws, raced)
        if err:
            check("precondition_failed" in text and "changed since this call read it" in text and
                  "read it again" in text and "[no file was changed]" in text, "the refusal: %r" % text)
            check(now == files[raced] + OTHER, "%s after a refusal: %r" % (raced, now[:200] if now else now))
            for k, v in files.items():
                if k != raced:
                    check(host(ws, k) == v, "%s was changed by a refused call" % k)
            counts["refused"] += 1
        elif OTHER not in (now or ""):
            counts["lost"] += 1
        else:
            check(edited_mark in now, "%s holds neither the edit nor a refusal: %r" % (raced, now[:200]))
            counts["after"] += 1
            sc = r["result"].get("structuredContent") or {}
            if sc.get("retries"):
                counts["retried"] += 1
    return counts


def cases(tmp, tag, daemon):
    ws = make_ws(tmp, "race-" + tag, SANDBOX)
    env = dict(os.environ)
    env["VECTORA_SANDBOX_SOCKET"] = daemon.sock if daemon else "/nonexistent/vectora-sandbox.sock"
    m = Mcp(ws, env, () if daemon else ("--no-daemon",))
    try:
        m.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}})
        m.notify("notifications/initialized")
        a = BIG + "x = 1\n"
        # multi_edit: the raced file is large (the window: its content goes
        # to the MCP server and back).
        c = race(ws, m, "multi_edit", {"path": "a.txt", "edits": [{"old_string": "x = 1", "new_string": "x = 2"}]},
                 {"a.txt": a}, "a.txt", "x = 2")
        tap.note("%s multi_edit: %r" % (tag, c))
        check(c["lost"] == 0, "%s multi_edit overwrote the other writer's change in %d of %d rounds"
              % (tag, c["lost"], ROUNDS))
        check(c["refused"] > 0, "%s multi_edit: the other writer never came between the read and the write" % tag)
        # apply_patch: big.txt written first, then a.txt (raced; its read
        # came after big.txt's), then c.txt added: a refusal of a.txt undoes
        # big.txt and adds nothing.
        patch = ("*** Begin Patch\n*** Update File: big.txt\n@@\n-line 000000 of a large file\n+line zero\n"
                 "*** Update File: a.txt\n@@\n-x = 1\n+x = 3\n*** Add File: c.txt\n+new\n*** End Patch\n")
        c = race(ws, m, "apply_patch", {"patch": patch}, {"big.txt": BIG, "a.txt": "x = 1\n", "c.txt": None},
                 "a.txt", "x = 3")
        tap.note("%s apply_patch: %r" % (tag, c))
        check(c["lost"] == 0, "%s apply_patch overwrote the other writer's change in %d of %d rounds"
              % (tag, c["lost"], ROUNDS))
        check(c["refused"] > 0, "%s apply_patch: the other writer never came between the read and the write" % tag)
        # The other writer during the write itself, after the worker began
        # the temporary file (the content is compared right before the
        # rename, not before the temporary file is written).
        c = race(ws, m, "multi_edit", {"path": "a.txt", "edits": [{"old_string": "x = 1", "new_string": "x = 2"}]},
                 {"a.txt": a}, "a.txt", "x = 2", during_write=True)
        tap.note("%s multi_edit, the other writer during the write: %r" % (tag, c))
        check(c["lost"] == 0, "%s multi_edit overwrote a change made during its write in %d of %d rounds"
              % (tag, c["lost"], ROUNDS))
        check(c["refused"] > 0, "%s multi_edit: the other writer never came during the write" % tag)
        # file_edit: re-read and re-applied on a change; both land.
        c = race(ws, m, "file_edit", {"path": "a.txt", "old_string": "x = 1", "new_string": "x = 4"},
                 {"a.txt": a}, "a.txt", "x = 4")
        tap.note("%s file_edit: %r" % (tag, c))
        check(c["lost"] == 0 and c["refused"] == 0, "%s file_edit: %r" % (tag, c))
        c = race(ws, m, "file_edit", {"path": "a.txt", "old_string": "x = 1", "new_string": "x = 4"},
                 {"a.txt": a}, "a.txt", "x = 4", during_write=True)
        tap.note("%s file_edit, the other writer during the write: %r" % (tag, c))
        check(c["lost"] == 0 and c["refused"] == 0, "%s file_edit, the other writer during the write: %r" % (tag, c))
    finally:
        m.close()


def t_daemon(tmp):
    with Daemon(tmp, "race") as d:
        cases(tmp, "daemon", d)


def t_embedded(tmp):
    cases(tmp, "embedded", None)


def main():
    return run_cases(tap, [t_daemon, t_embedded], "vs-edit-race-")


if __name__ == "__main__":
    sys.exit(main())
