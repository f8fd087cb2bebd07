"""A JSON-RPC 2.0 client for `vectora-sandbox mcp` over its stdio, shared by
the tests that drive the MCP server (test_mcp.py, test_in_process.py)."""
import json
import subprocess
import tempfile

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
