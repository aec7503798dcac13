// This tab's runs, newest first: language, verdict, time, memory, when; a click puts a run's code back in the editor.
// Kept in the page only (gone with the tab).
import type { ExecuteResult } from "@crucible/sdk";
import { announce, el } from "../../ui/dom";
import { ago, bytes, duration, when } from "../../ui/format";
import { Table } from "../../ui/table";

export interface PastRun {
  n: number;
  language: string;
  code: string;
  at: string;
  result: ExecuteResult;
}

export class RunHistory {
  private readonly runs: PastRun[] = [];
  private readonly table: Table<PastRun>;

  constructor(reopen: (run: PastRun) => void) {
    this.table = new Table<PastRun>({
      id: "runs",
      filter: "filter runs",
      key: (r) => String(r.n),
      sort: { key: "n", descending: true },
      open: reopen,
      empty: "No run in this tab yet.",
      columns: [
        { key: "n", label: "#", numeric: true, value: (r) => r.n },
        { key: "language", label: "language", value: (r) => r.language },
        { key: "code", label: "code", value: (r) => r.code, show: (r) => el("code", {}, firstLine(r.code)) },
        {
          key: "status",
          label: "verdict",
          value: (r) => r.result.status,
          className: (r) => (r.result.status === "ok" ? "pass" : "fail"),
        },
        {
          key: "wall",
          label: "wall",
          numeric: true,
          value: (r) => r.result.wall_ms,
          show: (r) => duration(r.result.wall_ms),
        },
        {
          key: "cpu",
          label: "CPU",
          numeric: true,
          value: (r) => r.result.cpu_ms,
          show: (r) => duration(r.result.cpu_ms),
        },
        {
          key: "memory",
          label: "memory",
          numeric: true,
          value: (r) => r.result.memory_bytes,
          show: (r) => bytes(r.result.memory_bytes),
        },
        { key: "at", label: "when", value: (r) => r.at, show: (r) => el("span", { title: when(r.at) }, ago(r.at)) },
      ],
    });
  }

  get element(): HTMLElement {
    return this.table.element;
  }

  add(language: string, code: string, result: ExecuteResult): void {
    this.runs.push({ n: this.runs.length + 1, language, code, at: new Date().toISOString(), result });
    this.table.set(this.runs);
    announce("runs", this.runs.length);
  }
}

function firstLine(code: string): string {
  const line = code.trim().split("\n")[0] ?? "";
  return line.length > 60 ? `${line.slice(0, 59)}…` : line;
}
