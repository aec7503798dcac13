// Drives the official MCP TypeScript SDK client (@modelcontextprotocol/sdk from npm) against Crucible, over
// streamable HTTP or stdio, and prints one JSON object with what the client got.
// Usage: node mcp.mjs http URL [TOKEN]   |   node mcp.mjs stdio COMMAND [ARG...]
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const [mode, target, ...rest] = process.argv.slice(2);
const transport = mode === 'http'
  ? new StreamableHTTPClientTransport(new URL(target), {
      requestInit: rest[0] ? { headers: { Authorization: `Bearer ${rest[0]}` } } : {},
    })
  : new StdioClientTransport({ command: target, args: rest, stderr: 'inherit' });

const client = new Client({ name: 'crucible-test', version: '1.0.0' });
await client.connect(transport);

const text = (r) => r.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');
const call = async (name, args) => {
  const r = await client.callTool({ name, arguments: args });
  return { isError: Boolean(r.isError), text: text(r), types: r.content.map((c) => c.type) };
};

const out = { server: client.getServerVersion(), instructions: client.getInstructions() };
const tools = (await client.listTools()).tools;
out.tools = tools.map((t) => t.name);
out.runCodeSchema = tools.find((t) => t.name === 'run_code');
out.hello = await call('run_code', { code: 'print(6 * 7)' });
out.fenced = await call('run_code', { code: "```python\nprint('fenced')\n```" });
out.js = await call('run_code', { language: 'javascript', code: 'console.log([1, 2, 3].map((x) => x * 2).join(","))' });
out.failing = await call('run_code', { code: 'import sys\nprint("partial")\nsys.exit(3)' });
out.cell1 = await call('run_in_session', { code: 'x = 41' });
out.cell2 = await call('run_in_session', { code: 'x + 1' });
out.write = await call('write_file', { path: 'notes/a.txt', content: 'hello from mcp' });
out.read = await call('read_file', { path: 'notes/a.txt' });
out.readByCode = await call('run_in_session', { code: "open('notes/a.txt').read().upper()" });
out.list = await call('list_files', {});
const created = await call('create_session', { language: 'javascript' });
out.created = created;
const id = created.text.match(/[0-9a-f]{32}/)[0];
out.jsCell = await call('run_in_session', { session_id: id, code: 'let y = 2; y * 21' });
out.closed = await call('close_session', { session_id: id });
out.afterClose = await call('run_in_session', { session_id: id, code: '1' });
out.runtimes = await call('list_runtimes', {});
out.missingCode = await call('run_code', {});
out.unknownLanguage = await call('run_code', { code: 'x', language: 'cobol' });
out.traversal = await call('write_file', { path: '../../etc/evil', content: 'x' });
try {
  await client.callTool({ name: 'no_such_tool', arguments: {} });
  out.unknownTool = 'no error';
} catch (e) {
  out.unknownTool = String(e.message);
}
await client.close();
console.log(JSON.stringify(out));
