// What the SDK does not wrap (yet), through its own transport: /healthz typed as the console reads it, /metrics as
// text. Kept here, small, until the SDK has them.
import { crucible } from "./client";

/** `GET /healthz`'s fields the console shows. */
export interface Health {
  status: "ok" | "draining" | "not_ready" | string;
  running: number;
  queued: number;
  max_running: number;
  max_queued: number;
  pool_ready: number;
  rss_bytes: number;
  uptime_ms: number;
  reason?: string;
  replica?: string;
  parts?: { part: string; state: string; detail?: string | null }[];
}

/** The server's health (a server not ready answers 503: a `CrucibleError` with its message). */
export function health(): Promise<Health> {
  return crucible().http.json<Health>("GET", "/healthz");
}

/** `GET /metrics`: the Prometheus text. */
export function metricsText(): Promise<string> {
  return crucible().http.read("GET", "/metrics", { accept: "text/plain" }, {}, (r) => r.text());
}
