// A burst through the official E2B SDK, unmodified (issue 50): N x (Sandbox.create + commands.run + kill) at once.
// Env: E2B_API_URL, E2B_SANDBOX_URL, E2B_API_KEY; argument: N. Prints p50/p99 per phase, failures by error, what is left.
import { Sandbox } from 'e2b';

const n = Number(process.argv[2] ?? 100);
const pct = (xs, p) => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.round((p / 100) * (s.length - 1)))];
};
const creates = [];
const firsts = [];
const failures = {};
const started = performance.now();
await Promise.all(Array.from({ length: n }, async (_, i) => {
  const t0 = performance.now();
  try {
    const sbx = await Sandbox.create({ timeoutMs: 300_000 });
    const t1 = performance.now();
    try {
      const r = await sbx.commands.run(`echo ${i}`);
      if (r.stdout !== `${i}\n`) throw new Error(`stdout ${JSON.stringify(r.stdout)}`);
      creates.push(t1 - t0);
      firsts.push(performance.now() - t0);
    } finally {
      await sbx.kill();
    }
  } catch (e) {
    const key = `${e?.name ?? 'Error'}: ${String(e?.message ?? e).slice(0, 80)}`;
    failures[key] = (failures[key] ?? 0) + 1;
  }
}));
const total = (performance.now() - started) / 1000;
const left = (await Sandbox.list().nextItems()).length;
const f = (x) => x.toFixed(1);
console.log(`e2b        n=${n} succeeded ${creates.length} in ${total.toFixed(1)} s; create p50 ${f(pct(creates, 50))} ms`
  + ` p99 ${f(pct(creates, 99))} ms; create+first command p50 ${f(pct(firsts, 50))} ms p99 ${f(pct(firsts, 99))} ms`);
console.log(`e2b        failures ${JSON.stringify(failures)}; sandboxes left ${left}`);
// explained: the disk full, refused before anything was written (E2B's SDK has no class for a 507)
const unexplained = Object.keys(failures).filter((k) => !k.includes('507: the data directory')).length;
process.exit(unexplained === 0 && left === 0 ? 0 : 1);
