// Latency figures for Crucible's E2B-compatible API, driven by the official @e2b/code-interpreter SDK, against
// Crucible's own API in the same run (scripts/bench-e2b.sh starts the server).
// Env: E2B_API_URL, E2B_SANDBOX_URL, E2B_API_KEY. Args: -n N (default 30), --spares K (the spares the server keeps:
// before each timed create the bench waits until that many are ready, so every create may take one; default 1),
// --node (also time the `node` template, which needs a JavaScript spare).
// In rounds, each of these once, in turns:
//   (a) Sandbox.create() → the end of its first runCode('1+1')             (a spare waited for)
//   (b) Sandbox.create() → the end of its first commands.run('echo hi')    (a spare waited for)
//   (c) POST /v1/sessions → its first execute of 1+1                       (a spare waited for: the native spare path)
//   (d) POST /v1/sessions with other limits → its first execute            (made when asked: no spare fits)
//   (e) with --node: Sandbox.create('node') → runCode('1+1'), and POST /v1/sessions {"language":"javascript"} → execute
// each split into its phases (the create call, the first command). Then on one live sandbox: runCode against the
// native execute, and commands.run. Prints a table, the ratios, and a last line of JSON with every figure.
import { Sandbox } from '@e2b/code-interpreter';

function arg(name, fallback) {
  const i = process.argv.indexOf(name);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
}

const N = Number.parseInt(arg('-n', '30'), 10);
const SPARES = Number.parseInt(arg('--spares', '1'), 10);
const NODE = process.argv.includes('--node');
const WARMUP = 3;
const API = (process.env.E2B_API_URL ?? '').replace(/\/+$/, '');
const KEY = process.env.E2B_API_KEY ?? '';
if (!API || !KEY || !Number.isInteger(N) || N < 1 || !Number.isInteger(SPARES) || SPARES < 0) {
  console.error('usage: E2B_API_URL=… E2B_SANDBOX_URL=… E2B_API_KEY=… node e2b-bench.mjs [-n N] [--spares K] [--node]');
  process.exit(2);
}
const AUTH = { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' };

/** Nearest-rank percentile of the samples, in ms. */
function percentile(samples, p) {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

function stats(samples) {
  const r = (ms) => Math.round(ms * 10) / 10;
  return { n: samples.length, p50: r(percentile(samples, 50)), p99: r(percentile(samples, 99)),
    min: r(Math.min(...samples)), max: r(Math.max(...samples)) };
}

async function call(method, path, body) {
  const res = await fetch(`${API}${path}`, { method, headers: AUTH, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 300)}`);
  return text ? JSON.parse(text) : null;
}

/** Waits (up to 20 s) until the server has `SPARES` spares ready; whether it did. */
async function sparesReady() {
  if (SPARES === 0) return true;
  const end = Date.now() + 20_000;
  while (Date.now() < end) {
    const res = await fetch(`${API}/metrics`, { headers: AUTH });
    const line = (await res.text()).split('\n').find((l) => l.startsWith('crucible_sessions_spares '));
    if (line && Number.parseFloat(line.split(' ')[1]) >= SPARES) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return false;
}

let spareMisses = 0;

/** Times `create` then `first` (each returning a value for the next); [total, create, first] in ms. */
async function phases(create, first, cleanup) {
  if (!(await sparesReady())) spareMisses++;
  const t0 = performance.now();
  const made = await create();
  const t1 = performance.now();
  await first(made);
  const t2 = performance.now();
  await cleanup(made).catch((e) => console.error(`cleanup: ${e.message}`));
  return [t2 - t0, t1 - t0, t2 - t1];
}

function expectTwo(text, via) {
  if (text !== '2') throw new Error(`${via}: 1+1 gave ${JSON.stringify(text)}`);
}

async function nativeExecute(id) {
  const r = await call('POST', `/v1/sessions/${encodeURIComponent(id)}/execute`, { code: '1+1' });
  if (r.error || r.result !== '2') throw new Error(`native execute of 1+1: ${JSON.stringify(r).slice(0, 300)}`);
}

const cases = {
  '(a) E2B create → first runCode': () => phases(() => Sandbox.create(),
    async (sbx) => expectTwo((await sbx.runCode('1+1')).text, 'runCode'), (sbx) => sbx.kill()),
  '(b) E2B create → first commands.run': () => phases(() => Sandbox.create(), async (sbx) => {
    const r = await sbx.commands.run('echo hi');
    if (r.stdout !== 'hi\n') throw new Error(`echo hi gave ${JSON.stringify(r.stdout)}`);
  }, (sbx) => sbx.kill()),
  '(c) native create → first execute (spare)': () => phases(
    async () => (await call('POST', '/v1/sessions', { language: 'python' })).id, nativeExecute,
    (id) => call('DELETE', `/v1/sessions/${id}`)),
  '(d) native create → first execute (no spare)': () => phases(
    async () => (await call('POST', '/v1/sessions', { language: 'python', limits: { memory_mb: 384 } })).id, nativeExecute,
    (id) => call('DELETE', `/v1/sessions/${id}`)),
};
if (NODE) {
  cases['(e) E2B create(node) → first runCode'] = () => phases(() => Sandbox.create('node'),
    async (sbx) => expectTwo((await sbx.runCode('1+1')).text, 'runCode in node'), (sbx) => sbx.kill());
  cases['(e) native create(javascript) → first execute'] = () => phases(
    async () => (await call('POST', '/v1/sessions', { language: 'javascript' })).id, nativeExecute,
    (id) => call('DELETE', `/v1/sessions/${id}`));
}

const samples = Object.fromEntries(Object.keys(cases).map((k) => [k, { total: [], create: [], first: [] }]));
for (const name of Object.keys(cases)) await cases[name](); // one unmeasured round: first-use costs of each path
for (let i = 0; i < N; i++) {
  const names = Object.keys(cases);
  const order = i % 2 === 0 ? names : [...names].reverse();
  for (const name of order) {
    const [total, create, first] = await cases[name]();
    samples[name].total.push(total);
    samples[name].create.push(create);
    samples[name].first.push(first);
  }
}

const figures = { n: N, spares: SPARES, spareMisses };
for (const [name, s] of Object.entries(samples)) {
  figures[name] = { total: stats(s.total), create: stats(s.create), first: stats(s.first) };
}

// On one live sandbox: runCode against the native execute of the same cell, and commands.run.
await sparesReady();
const sbx = await Sandbox.create();
try {
  for (let i = 0; i < WARMUP; i++) {
    await sbx.runCode('1+1');
    await nativeExecute(sbx.sandboxId);
    await sbx.commands.run('echo hi');
  }
  const sdk = [];
  const native = [];
  const echo = [];
  for (let i = 0; i < N; i++) {
    let t = performance.now();
    expectTwo((await sbx.runCode('1+1')).text, 'runCode');
    sdk.push(performance.now() - t);
    t = performance.now();
    await nativeExecute(sbx.sandboxId);
    native.push(performance.now() - t);
    t = performance.now();
    await sbx.commands.run('echo hi');
    echo.push(performance.now() - t);
  }
  figures.liveRunCode = stats(sdk);
  figures.liveNativeExecute = stats(native);
  figures.liveCommandsRun = stats(echo);
} finally {
  await sbx.kill().catch(() => {});
}

const fmt = (ms) => ms.toFixed(1).padStart(8);
const width = Math.max(...Object.keys(samples).map((k) => k.length), 34);
console.log(`${'measure'.padEnd(width)}  ${'p50'.padStart(8)} ${'p99'.padStart(8)}   create p50  first p50   (ms, n=${N})`);
for (const name of Object.keys(samples)) {
  const f = figures[name];
  console.log(`${name.padEnd(width)}  ${fmt(f.total.p50)} ${fmt(f.total.p99)}   ${fmt(f.create.p50)}   ${fmt(f.first.p50)}`);
}
for (const [label, f] of [['runCode on a live sandbox', figures.liveRunCode],
  ['native execute on the same', figures.liveNativeExecute], ['commands.run on the same', figures.liveCommandsRun]]) {
  console.log(`${label.padEnd(width)}  ${fmt(f.p50)} ${fmt(f.p99)}`);
}
const spare = figures['(c) native create → first execute (spare)'].total.p50;
const ratio = (name) => figures[name].total.p50 / spare;
const goal = (r) => `${r.toFixed(2)} (goal ≤ 1.5: ${r <= 1.5 ? 'met' : 'NOT met'})`;
figures.ratioRunCode = Math.round(ratio('(a) E2B create → first runCode') * 100) / 100;
figures.ratioCommandsRun = Math.round(ratio('(b) E2B create → first commands.run') * 100) / 100;
console.log(`\nE2B create → first runCode p50 / native spare create → first execute p50 = ${goal(figures.ratioRunCode)}`);
console.log(`E2B create → first commands.run p50 / native spare create → first execute p50 = ${goal(figures.ratioCommandsRun)}`);
console.log(`native made when asked / native spare = ${(figures['(d) native create → first execute (no spare)'].total.p50 / spare).toFixed(2)}`);
if (NODE) {
  const r = figures['(e) E2B create(node) → first runCode'].total.p50
    / figures['(e) native create(javascript) → first execute'].total.p50;
  figures.ratioNode = Math.round(r * 100) / 100;
  console.log(`E2B create(node) → first runCode p50 / native javascript spare p50 = ${goal(r)}`);
}
if (spareMisses > 0) console.log(`(${spareMisses} creates found fewer than ${SPARES} spares ready after 20 s)`);
console.log(JSON.stringify(figures));
