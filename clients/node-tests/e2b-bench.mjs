// Latency figures for Crucible's E2B-compatible API, driven by the official @e2b/code-interpreter SDK.
// Env: E2B_API_URL, E2B_SANDBOX_URL, E2B_API_KEY. Args: -n N (default 30).
//   (a) Sandbox.create() to the end of the first runCode('1+1'), over N sandboxes (each killed after, not timed)
//   (b) runCode('1+1') on one live sandbox vs the same cell through Crucible's own API
//       POST {E2B_API_URL}/v1/sessions/{sandboxId}/execute (the sandbox id is the session id), alternating rounds
//   (c) commands.run('echo hi') on the live sandbox
// Prints a table, the ratios, and a last line of JSON with every figure.
import { Sandbox } from '@e2b/code-interpreter';

function arg(name, fallback) {
  const i = process.argv.indexOf(name);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
}

const N = Number.parseInt(arg('-n', '30'), 10);
const WARMUP = 3;
const API = (process.env.E2B_API_URL ?? '').replace(/\/+$/, '');
const KEY = process.env.E2B_API_KEY ?? '';
if (!API || !KEY || !Number.isInteger(N) || N < 1) {
  console.error('usage: E2B_API_URL=… E2B_SANDBOX_URL=… E2B_API_KEY=… node e2b-bench.mjs [-n N]');
  process.exit(2);
}

/** Nearest-rank percentile of the samples, in ms. */
function percentile(samples, p) {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

function stats(samples) {
  const r = (ms) => Math.round(ms * 10) / 10;
  return {
    n: samples.length,
    p50: r(percentile(samples, 50)),
    p90: r(percentile(samples, 90)),
    min: r(Math.min(...samples)),
    max: r(Math.max(...samples)),
  };
}

async function timed(fn) {
  const t0 = performance.now();
  const value = await fn();
  return [performance.now() - t0, value];
}

function expectTwo(text, via) {
  if (text !== '2') throw new Error(`${via}: 1+1 gave ${JSON.stringify(text)}`);
}

async function nativeExecute(sandboxId) {
  const res = await fetch(`${API}/v1/sessions/${encodeURIComponent(sandboxId)}/execute`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ code: '1+1' }),
  });
  const body = await res.text();
  if (!res.ok) throw new Error(`POST /v1/sessions/${sandboxId}/execute: ${res.status} ${body.slice(0, 300)}`);
  const json = JSON.parse(body);
  if (json.error || json.result !== '2') {
    throw new Error(`native execute of 1+1: ${body.slice(0, 300)}`);
  }
}

async function sdkRunCode(sbx) {
  const ex = await sbx.runCode('1+1');
  expectTwo(ex.text, 'runCode');
}

const figures = {};

// (a) create → first runCode
{
  const samples = [];
  for (let i = 0; i < N; i++) {
    let sbx;
    const [ms] = await timed(async () => {
      sbx = await Sandbox.create();
      await sdkRunCode(sbx);
    });
    samples.push(ms);
    await sbx.kill().catch((e) => console.error(`kill ${sbx.sandboxId}: ${e.message}`));
  }
  figures.createToFirstRunCode = stats(samples);
}

// (a') the same through Crucible's own API: POST /v1/sessions, then its first execute (the baseline of (a))
{
  const samples = [];
  const auth = { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' };
  for (let i = 0; i < N; i++) {
    let id;
    const [ms] = await timed(async () => {
      const res = await fetch(`${API}/v1/sessions`, { method: 'POST', headers: auth, body: '{"language":"python"}' });
      const body = await res.text();
      if (!res.ok) throw new Error(`POST /v1/sessions: ${res.status} ${body.slice(0, 300)}`);
      id = JSON.parse(body).id;
      await nativeExecute(id);
    });
    samples.push(ms);
    await fetch(`${API}/v1/sessions/${id}`, { method: 'DELETE', headers: auth });
  }
  figures.nativeCreateToFirstExecute = stats(samples);
}

// (b) and (c) on one live sandbox
const sbx = await Sandbox.create();
try {
  for (let i = 0; i < WARMUP; i++) {
    await sdkRunCode(sbx);
    await nativeExecute(sbx.sandboxId);
    await sbx.commands.run('echo hi');
  }
  const sdk = [];
  const native = [];
  for (let i = 0; i < N; i++) {
    const order = i % 2 === 0 ? ['sdk', 'native'] : ['native', 'sdk'];
    for (const which of order) {
      if (which === 'sdk') sdk.push((await timed(() => sdkRunCode(sbx)))[0]);
      else native.push((await timed(() => nativeExecute(sbx.sandboxId)))[0]);
    }
  }
  figures.runCodeSdk = stats(sdk);
  figures.executeNative = stats(native);

  const echo = [];
  for (let i = 0; i < N; i++) {
    echo.push((await timed(async () => {
      const r = await sbx.commands.run('echo hi');
      if (r.stdout !== 'hi\n') throw new Error(`echo hi gave ${JSON.stringify(r.stdout)}`);
    }))[0]);
  }
  figures.commandsRunEcho = stats(echo);
} finally {
  await sbx.kill().catch(() => {});
}

const rows = [
  ['(a) Sandbox.create() → first runCode(1+1)', figures.createToFirstRunCode],
  ["(a') POST /v1/sessions → first execute", figures.nativeCreateToFirstExecute],
  ['(b) runCode(1+1) via E2B SDK', figures.runCodeSdk],
  ['(b) POST /v1/sessions/{id}/execute 1+1', figures.executeNative],
  ['(c) commands.run(echo hi)', figures.commandsRunEcho],
];
const width = Math.max(...rows.map(([label]) => label.length));
const fmt = (ms) => ms.toFixed(1).padStart(9);
console.log(`${'measure'.padEnd(width)}  ${'n'.padStart(4)} ${'p50 ms'.padStart(9)} ${'p90 ms'.padStart(9)} ${'min ms'.padStart(9)} ${'max ms'.padStart(9)}`);
for (const [label, s] of rows) {
  console.log(`${label.padEnd(width)}  ${String(s.n).padStart(4)} ${fmt(s.p50)} ${fmt(s.p90)} ${fmt(s.min)} ${fmt(s.max)}`);
}
const ratio = figures.runCodeSdk.p50 / figures.executeNative.p50;
figures.ratioRunCodeSdkToNativeP50 = Math.round(ratio * 100) / 100;
console.log(`\nratio runCode(SDK) p50 / native execute p50 = ${ratio.toFixed(2)} (goal ≤ 1.5: ${ratio <= 1.5 ? 'met' : 'NOT met'})`);
console.log(`ratio commands.run(echo) p50 / native execute p50 = ${(figures.commandsRunEcho.p50 / figures.executeNative.p50).toFixed(2)}`);
const create = figures.createToFirstRunCode.p50;
console.log(`Sandbox.create() → first runCode p50 = ${create.toFixed(1)} ms (goal ≤ 100: ${create <= 100 ? 'met' : 'NOT met'});`
  + ` / native create → first execute p50 = ${(create / figures.nativeCreateToFirstExecute.p50).toFixed(2)}`);
console.log(JSON.stringify({ n: N, ...figures }));
