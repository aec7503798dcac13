// The Prometheus text of /metrics, read into what the server page shows: the sums its charts need, and the engine's
// own counters and gauges as rows with their values in human units.
import { bytes, count, seconds } from "../../ui/format";

export interface Sample {
  name: string;
  labels: string;
  value: number;
}

/** Every sample line (comments and blank lines left out). */
export function parse(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split("\n")) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? ([0-9.eE+-]+|NaN|[+-]Inf)$/.exec(line);
    if (m)
      samples.push({ name: m[1], labels: (m[2] ?? "").replace(/^\{|\}$/g, "").replace(/"/g, ""), value: Number(m[3]) });
  }
  return samples;
}

/** The requests served, and the request-duration histogram's sum and count, over every route. */
export function totals(samples: Sample[]): { requests: number; durationSum: number; durationCount: number } {
  const sum = (name: string) => samples.filter((s) => s.name === name).reduce((a, s) => a + s.value, 0);
  return {
    requests: sum("crucible_http_requests_total"),
    durationSum: sum("crucible_http_request_duration_seconds_sum"),
    durationCount: sum("crucible_http_request_duration_seconds_count"),
  };
}

/** The engine's counters (the HTTP ones are charted), named without `crucible_` and `_total`. */
export function counters(samples: Sample[]): Sample[] {
  return samples
    .filter((s) => s.name.startsWith("crucible_") && !s.name.startsWith("crucible_http_"))
    .map((s) => ({ ...s, name: s.name.replace(/^crucible_/, "").replace(/_total$/, "") }));
}

/** A value in its metric's unit: bytes, seconds, or a count. */
export function shown(s: Sample): string {
  if (/_bytes(_|$)/.test(s.name)) return bytes(s.value);
  if (/_seconds(_sum|_max)?$/.test(s.name)) return seconds(s.value);
  return count(s.value);
}
