// The console's pure modules under node:test (no browser): the units values are shown in, the reading of /metrics
// and of an evaluation's results. esbuild compiles them from src/ into a temporary directory first.
// Run: node --test test/units.test.mjs (ConsoleBrowserTest does).
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { build } from "esbuild";

const out = mkdtempSync(join(tmpdir(), "crucible-console-units-"));
after(() => rmSync(out, { recursive: true, force: true }));
await build({
  absWorkingDir: new URL("..", import.meta.url).pathname,
  entryPoints: {
    format: "src/ui/format.ts",
    metrics: "src/pages/server/metrics.ts",
    results: "src/pages/evaluations/results.ts",
  },
  bundle: true,
  format: "esm",
  platform: "neutral",
  outdir: out,
  logLevel: "warning",
});
const format = await import(join(out, "format.js"));
const metrics = await import(join(out, "metrics.js"));
const results = await import(join(out, "results.js"));

test("sizes in binary units", () => {
  assert.equal(format.bytes(0), "0 B");
  assert.equal(format.bytes(512), "512 B");
  assert.equal(format.bytes(1536), "1.5 KiB");
  assert.equal(format.bytes(256 * 1024 * 1024), "256 MiB");
  assert.equal(format.bytes(1.25 * 1024 ** 3), "1.25 GiB");
  assert.equal(format.bytes(undefined), "–");
  assert.equal(format.mebibytes(384), "384 MiB");
  assert.equal(format.mebibytes(2048), "2 GiB");
});

test("durations in the largest units that fit", () => {
  assert.equal(format.duration(0.25), "0.25 ms");
  assert.equal(format.duration(850), "850 ms");
  assert.equal(format.duration(1250), "1.25 s");
  assert.equal(format.duration(30_000), "30 s");
  assert.equal(format.duration(200_000), "3 min 20 s");
  assert.equal(format.duration(3_600_000), "1 h");
  assert.equal(format.duration(7_500_000), "2 h 5 min");
  assert.equal(format.duration(3 * 86_400_000 + 4 * 3_600_000), "3 d 4 h");
  assert.equal(format.seconds(1800), "30 min");
});

test("rates, counts, percentages and times relative to now", () => {
  assert.equal(format.rate(0), "0/s");
  assert.equal(format.rate(0.5), "0.5/s");
  assert.equal(format.rate(12.34), "12.3/s");
  assert.equal(format.rate(1204.4), "1,204/s");
  assert.equal(format.count(1234567), "1,234,567");
  assert.equal(format.percent(2 / 3), "66.7 %");
  const now = Date.parse("2026-01-01T12:00:00Z");
  assert.equal(format.ago("2026-01-01T11:59:48Z", now), "12 s ago");
  assert.equal(format.ago("2026-01-01T12:05:00Z", now), "in 5 min");
  assert.equal(format.ago("2026-01-01T12:00:00Z", now), "just now");
});

test("/metrics read: the HTTP totals summed over routes, the engine's counters in their units", () => {
  const samples = metrics.parse(
    [
      "# HELP crucible_http_requests_total requests",
      'crucible_http_requests_total{method="GET",route="/v1/runtimes",status="200"} 3',
      'crucible_http_requests_total{method="POST",route="/v1/execute",status="200"} 4',
      'crucible_http_request_duration_seconds_sum{route="/v1/execute"} 0.5',
      'crucible_http_request_duration_seconds_count{route="/v1/execute"} 4',
      "crucible_pool_hits_total 7",
      "crucible_sessions_memory_used_bytes 1.572864E8",
      'crucible_turns_wait_seconds_sum{queue="runs"} 90',
    ].join("\n"),
  );
  assert.deepEqual(metrics.totals(samples), { requests: 7, durationSum: 0.5, durationCount: 4 });
  const rows = metrics.counters(samples);
  assert.deepEqual(
    rows.map((r) => r.name),
    ["pool_hits", "sessions_memory_used_bytes", "turns_wait_seconds_sum"],
  );
  assert.deepEqual(rows.map(metrics.shown), ["7", "150 MiB", "1 min 30 s"]);
  assert.equal(rows[2].labels, "queue=runs");
});

test("an evaluation's results: rows by task then sample, its summary, the n-th sample of a task", () => {
  const { rows, summary } = results.readResults(
    results.jsonl(
      [
        '{"task_id": "t/10", "sample": 0, "passed": true, "status": "ok"}',
        '{"task_id": "t/2", "sample": 1, "passed": false, "status": "timeout"}',
        '{"task_id": "t/2", "sample": 0, "passed": true, "status": "ok"}',
        '{"summary": {"problems": 2, "samples": 3, "passed": 2, "pass_at_k": {"pass@1": 0.75}}}',
      ].join("\n"),
    ),
  );
  assert.deepEqual(
    rows.map((r) => `${r.task_id}#${r.sample}`),
    ["t/2#0", "t/2#1", "t/10#0"],
  );
  assert.equal(summary.pass_at_k["pass@1"], 0.75);
  const samples = results.readSamples(
    results.jsonl('{"task_id": "a", "completion": "x"}\n{"task_id": "a", "code": "y"}'),
  );
  assert.equal(samples.get("a#1"), "y");
  assert.ok(
    results.FILTERS.unproven.keep({ passed: false, status: "ok", result: "the tests did not run to their end" }),
  );
});
