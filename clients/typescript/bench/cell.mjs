// A session cell (x + 1) through the SDK against the same cell through raw fetch, in one process, call by call
// alternating; prints medians and the ratio. CRUCIBLE_URL, CRUCIBLE_TOKEN; args: [iterations per round] [rounds].
import { Crucible } from "../dist/index.js";

const iterations = Number(process.argv[2] ?? 200);
const rounds = Number(process.argv[3] ?? 5);
const crucible = new Crucible();
const session = await crucible.createSession();
await session.run("x = 41");
const url = `${crucible.http.baseUrl}/v1/sessions/${session.id}/execute`;
const headers = { "Content-Type": "application/json" };
if (crucible.http.token) headers.Authorization = `Bearer ${crucible.http.token}`;
const raw = async () => {
  const r = await fetch(url, { method: "POST", headers, body: JSON.stringify({ code: "x + 1" }) });
  const body = await r.json();
  if (body.result !== "42") throw new Error(JSON.stringify(body));
};
const sdk = async () => {
  if ((await session.run("x + 1")).result !== "42") throw new Error("wrong result");
};
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const timed = async (f) => {
  const t = process.hrtime.bigint();
  await f();
  return Number(process.hrtime.bigint() - t) / 1e6;
};
for (let i = 0; i < 50; i++) {
  await raw();
  await sdk();
} // warm-up
const rawMs = [],
  sdkMs = [];
for (let r = 0; r < rounds; r++) {
  // call by call, alternating, so that both see the same noise
  const a = [],
    b = [];
  for (let i = 0; i < iterations; i++) {
    if (i % 2 === 0) {
      a.push(await timed(raw));
      b.push(await timed(sdk));
    } else {
      b.push(await timed(sdk));
      a.push(await timed(raw));
    }
  }
  rawMs.push(median(a));
  sdkMs.push(median(b));
}
await session.delete();
const a = median(rawMs),
  b = median(sdkMs);
console.log(
  `TypeScript: a session cell, ${iterations} x ${rounds} rounds, medians: raw fetch ${a.toFixed(3)} ms,` +
    ` the SDK ${b.toFixed(3)} ms: ${(b / a).toFixed(3)}x, ${(b - a).toFixed(3)} ms over` +
    ` (goal: within 10% plus 0.2 ms, i.e. <= ${(a * 1.1 + 0.2).toFixed(3)} ms)`,
);
