// The official MCP TypeScript SDK's Client over StdioClientTransport,
// driving `vectora-sandbox mcp` as an agent platform would
// (tests/integration/test_mcp_concurrent.py). Usage:
//   node mcp-sdk-client.cjs SDK_PREFIX CLI WORKSPACE
// with the server's environment in this process's. Prints one JSON object
// of what it saw; the Python test judges it.
"use strict";
const [prefix, cli, ws] = process.argv.slice(2);
const load = (m) => require(require.resolve("@modelcontextprotocol/sdk/" + m, { paths: [prefix] }));
const { Client } = load("client/index.js");
const { StdioClientTransport } = load("client/stdio.js");

async function main() {
  const out = {};
  const transport = new StdioClientTransport({ command: cli, args: ["mcp", "-w", ws], env: process.env, stderr: "pipe" });
  let stderr = "";
  transport.stderr.on("data", (d) => (stderr += d));
  const client = new Client({ name: "vectora-sdk-test", version: "1" });
  await client.connect(transport);
  out.instructions = client.getInstructions();
  const tools = (await client.listTools()).tools;
  out.tools = tools.map((t) => t.name);
  out.all_have_output_schema = tools.every((t) => t.outputSchema && t.title && t.annotations);

  // A long command with progress, a ping and a file_read while it runs.
  const progress = [];
  const t0 = Date.now();
  const long = client.callTool({ name: "terminal", arguments: { command: "sleep 5; echo slept" } }, undefined, {
    onprogress: (p) => progress.push({ at: Date.now() - t0, progress: p.progress, message: p.message }),
    resetTimeoutOnProgress: true,
    timeout: 3000, // shorter than the command: only progress keeps it alive
  });
  await new Promise((r) => setTimeout(r, 500));
  let t = Date.now();
  await client.ping();
  out.ping_ms = Date.now() - t;
  t = Date.now();
  const read = await client.callTool({ name: "file_read", arguments: { path: "a.txt" } });
  out.read_ms = Date.now() - t;
  out.read_text = read.content[0].text;
  const res = await long;
  out.long_ms = Date.now() - t0;
  out.long_text = res.content[0].text;
  out.progress = progress;

  // The edit tools, their results checked by the SDK against outputSchema.
  const me = await client.callTool({
    name: "multi_edit",
    arguments: { path: "a.txt", edits: [{ old_string: "one", new_string: "ONE" }, { old_string: "ten", new_string: "TEN" }] },
  });
  out.multi_edit = { isError: me.isError, text: me.content[0].text, diff: me.structuredContent && me.structuredContent.diff };
  const ap = await client.callTool({
    name: "apply_patch",
    arguments: { patch: "*** Begin Patch\n*** Update File: a.txt\n@@\n-ONE\n+uno\n*** Add File: sdk.txt\n+from the sdk\n*** End Patch\n" },
  });
  out.apply_patch = { isError: ap.isError, text: ap.content[0].text };
  const bad = await client.callTool({
    name: "apply_patch",
    arguments: { patch: "*** Begin Patch\n*** Update File: a.txt\n@@\n-uno\n+one\n*** Update File: .env\n@@\n-TOPSECRET=1\n+x\n*** End Patch\n" },
  });
  out.refused = { isError: bad.isError, text: bad.content[0].text };
  await client.close();
  out.stderr = stderr;
  process.stdout.write(JSON.stringify(out));
}

main().catch((e) => {
  process.stdout.write(JSON.stringify({ exception: String(e && e.stack ? e.stack : e) }));
  process.exit(1);
});
