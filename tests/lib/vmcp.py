"""JSON-RPC 2.0 clients for `vectora-sandbox mcp` over its stdio, shared by
the tests that drive the MCP server: Mcp, one request at a time
(test_mcp.py, test_in_process.py); Server, requests in flight together with
the arrival time of each message (test_mcp_concurrent.py,
test_mcp_embedded.py)."""
import json
import queue
import subprocess
import tempfile
import threading
import time

from vtest import CLI


class Mcp:
    """A JSON-RPC 2.0 client over a child's stdin/stdout, one message per line."""

    def __init__(self, ws, env, extra=()):
        self.err = tempfile.TemporaryFile()
        self.p = subprocess.Popen([CLI, "mcp", "-w", ws] + list(extra), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=self.err, env=env)
        self.next_id = 0

    def send_line(self, line):
        self.p.stdin.write(line if isinstance(line, bytes) else line.encode())
        self.p.stdin.write(b"\n")
        self.p.stdin.flush()

    def recv(self):
        line = self.p.stdout.readline()
        if not line:
            raise EOFError("the server closed stdout; stderr: " + self.stderr())
        return json.loads(line)

    def request(self, method, params=None):
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send_line(json.dumps(msg))
        resp = self.recv()
        if resp.get("id") != self.next_id:
            raise AssertionError("response id %r for request %d" % (resp.get("id"), self.next_id))
        return resp

    def notify(self, method, params=None):
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self.send_line(json.dumps(msg))

    def call(self, tool, **args):
        return self.request("tools/call", {"name": tool, "arguments": args})

    def stderr(self):
        self.err.seek(0)
        return self.err.read().decode(errors="replace")

    def close(self):
        self.p.stdin.close()
        try:
            rc = self.p.wait(15)
        except subprocess.TimeoutExpired:
            self.p.kill()
            rc = self.p.wait()
        return rc


class Server:
    """vectora-sandbox mcp with a thread reading its stdout: responses by
    id, notifications in arrival order, each with its arrival time."""

    def __init__(self, ws, env, extra=()):
        self.err = tempfile.TemporaryFile()
        self.p = subprocess.Popen([CLI, "mcp", "-w", ws] + list(extra), stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=self.err, env=env)
        self.q = queue.Queue()
        self.responses = {}
        self.notes = []
        self.next_id = 0
        self.lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stdout:
            msg = json.loads(line)
            self.q.put((time.monotonic(), msg))
        self.q.put((time.monotonic(), None))

    def send(self, method, params=None, notify=False):
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        if not notify:
            with self.lock:
                self.next_id += 1
                msg["id"] = self.next_id
        self.p.stdin.write(json.dumps(msg).encode() + b"\n")
        self.p.stdin.flush()
        return msg.get("id"), time.monotonic()

    def wait(self, rid, timeout=30):
        """The response to rid and when it arrived."""
        end = time.monotonic() + timeout
        while rid not in self.responses:
            try:
                t, msg = self.q.get(timeout=max(0.01, end - time.monotonic()))
            except queue.Empty:
                raise AssertionError("no response to %r in %d s; stderr: %s" % (rid, timeout, self.stderr()))
            if msg is None:
                raise AssertionError("the server closed stdout; stderr: " + self.stderr())
            if "id" in msg and ("result" in msg or "error" in msg):
                self.responses[msg["id"]] = (t, msg)
            else:
                self.notes.append((t, msg))
        return self.responses[rid]

    def request(self, method, params=None, timeout=30):
        rid, _ = self.send(method, params)
        return self.wait(rid, timeout)[1]

    def call(self, tool, meta=None, **args):
        params = {"name": tool, "arguments": args}
        if meta:
            params["_meta"] = meta
        return self.request("tools/call", params)

    def init(self):
        r = self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                        "clientInfo": {"name": "test-mcp-concurrent", "version": "1"}})
        self.send("notifications/initialized", notify=True)
        return r

    def stderr(self):
        self.err.seek(0)
        return self.err.read().decode(errors="replace")

    def close(self):
        try:
            self.p.stdin.close()
        except BrokenPipeError:
            pass
        try:
            self.p.wait(20)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
