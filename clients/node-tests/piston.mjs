// Drives the piston-client package from the npm registry against a Crucible server, unchanged.
// Usage: node piston.mjs http://127.0.0.1:PORT — prints one JSON object with what the client got.
import piston from 'piston-client';

const client = piston({ server: process.argv[2] });
const runtimes = await client.runtimes();
const hello = await client.execute('python', 'import sys\nprint("hello from piston-client", sys.argv[1:])');
const stdin = await client.execute({ language: 'javascript', files: [{ content: 'process.stdin.on("data", d => console.log(String(d).trim().toUpperCase()))' }], stdin: 'shout', args: [] });
const cpp = await client.execute('c++', '#include <cstdio>\nint main(){ printf("%d\\n", 6 * 7); }');
console.log(JSON.stringify({ runtimes, hello, stdin, cpp }));
