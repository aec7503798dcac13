// The server: /healthz and /metrics every two seconds while the page is shown. Cards of its state, charts of the
// last five minutes (requests a second, mean latency, running and queued runs), each part's state, and the engine's
// counters in a table that sorts and filters.
import { describe } from "../api/client";
import { type Health, health, metricsText } from "../api/server";
import { LineChart } from "../ui/chart";
import { announce, el, statusLine } from "../ui/dom";
import { bytes, count, duration, rate } from "../ui/format";
import { Table } from "../ui/table";
import type { Page } from "./page";
import { counters, parse, type Sample, shown, totals } from "./server/metrics";

const EVERY_MS = 2000;
const HISTORY = 150; // two-second samples: the last five minutes

type Part = NonNullable<Health["parts"]>[number];

export function serverPage(): Page {
  let section: HTMLElement;
  let last: (ReturnType<typeof totals> & { at: number }) | undefined;
  const history: { rate: number; latency: number; running: number; queued: number }[] = [];
  const status = statusLine("server-status");
  const cards = el("dl", { id: "health", class: "cards" });
  const charts = {
    rate: new LineChart({
      id: "chart-rate",
      title: "Requests",
      capacity: HISTORY,
      stepMs: EVERY_MS,
      format: (v) => rate(v),
    }),
    latency: new LineChart({
      id: "chart-latency",
      title: "Mean latency",
      capacity: HISTORY,
      stepMs: EVERY_MS,
      format: (v) => duration(v),
    }),
    load: new LineChart({
      id: "chart-load",
      title: "Runs",
      capacity: HISTORY,
      stepMs: EVERY_MS,
      floor: 1,
      integer: true,
      format: (v) => count(v),
    }),
  };
  const parts = new Table<Part>({
    id: "parts",
    key: (p) => p.part,
    sort: { key: "part", descending: false },
    columns: [
      { key: "part", label: "part", value: (p) => p.part },
      { key: "state", label: "state", value: (p) => p.state, className: (p) => `part-${p.state}` },
      { key: "detail", label: "detail", value: (p) => p.detail ?? "" },
    ],
  });
  const table = new Table<Sample>({
    id: "counters",
    filter: "filter: pool, sessions, egress, verdicts…",
    key: (s) => `${s.name}{${s.labels}}`,
    sort: { key: "name", descending: false },
    columns: [
      { key: "name", label: "metric", value: (s) => s.name },
      { key: "labels", label: "labels", value: (s) => s.labels },
      { key: "value", label: "value", numeric: true, value: (s) => s.value, show: (s) => shown(s) },
    ],
  });

  function showHealth(h: Health): void {
    const facts: [string, string][] = [
      ["status", h.status],
      ["running", `${h.running} of ${h.max_running}`],
      ["queued", `${h.queued} of ${h.max_queued}`],
      ["warm pool", `${h.pool_ready} ready`],
      ["memory", bytes(h.rss_bytes)],
      ["uptime", duration(h.uptime_ms)],
    ];
    if (h.replica) facts.push(["replica", h.replica]);
    cards.replaceChildren(
      ...facts.map(([k, v]) =>
        el("div", { class: k === "status" ? `card ${v}` : "card" }, el("dt", {}, k), el("dd", {}, v)),
      ),
    );
    parts.set(h.parts ?? []);
  }

  async function refresh(): Promise<void> {
    const h = await health();
    showHealth(h);
    const samples = parse(await metricsText());
    table.set(counters(samples));
    const now = { ...totals(samples), at: Date.now() };
    if (last) {
      const elapsed = (now.at - last.at) / 1000;
      const served = now.durationCount - last.durationCount;
      history.push({
        rate: (now.requests - last.requests) / elapsed,
        latency: served > 0 ? ((now.durationSum - last.durationSum) / served) * 1000 : 0,
        running: h.running,
        queued: h.queued,
      });
      if (history.length > HISTORY) history.shift();
      charts.rate.draw([{ label: "served", values: history.map((s) => s.rate) }]);
      charts.latency.draw([{ label: "mean", values: history.map((s) => s.latency) }]);
      charts.load.draw([
        { label: "running", values: history.map((s) => s.running) },
        { label: "queued", values: history.map((s) => s.queued) },
      ]);
      announce("samples", history.length);
    }
    last = now;
  }

  return {
    id: "server",
    title: "Server",
    async mount(s) {
      section = s;
      section.append(
        el("h1", {}, "The server"),
        status.element,
        cards,
        el("div", { class: "charts" }, charts.rate.element, charts.latency.element, charts.load.element),
        el(
          "div",
          { class: "columns" },
          el("div", {}, el("h2", {}, "Parts"), parts.element),
          el("div", { class: "main" }, el("h2", {}, "Sessions, pool, egress, verdicts"), table.element),
        ),
      );
      const tick = async () => {
        if (!section.hidden) {
          try {
            await refresh();
            status.say("");
          } catch (e) {
            status.say(describe(e), true);
          }
        }
        setTimeout(() => void tick(), EVERY_MS);
      };
      await tick();
    },
  };
}
