// The token's evaluations on the server: progress, pass rate, pass@k, times; followed every second while one runs
// (and the page is shown); each opens into the results table, and stops or is deleted.
import type { EvaluationRun } from "@crucible/sdk";
import { crucible, describe } from "../../api/client";
import { announce, el } from "../../ui/dom";
import { ago, duration, percent, when } from "../../ui/format";
import { Table } from "../../ui/table";

export class RunsPanel {
  private following?: ReturnType<typeof setTimeout>;
  private readonly table: Table<EvaluationRun>;

  constructor(
    private readonly visible: () => boolean,
    private readonly opened: (run: EvaluationRun) => Promise<void>,
    private readonly say: (text: string, bad?: boolean) => void,
  ) {
    this.table = new Table<EvaluationRun>({
      id: "eval-runs",
      key: (r) => r.id,
      rowData: (r) => ({ "data-state": r.state }),
      sort: { key: "started", descending: true },
      empty: "No evaluation on this server yet.",
      columns: [
        { key: "id", label: "run", value: (r) => r.id, show: (r) => el("code", { title: r.id }, r.id.slice(0, 8)) },
        { key: "format", label: "format", value: (r) => r.format },
        {
          key: "state",
          label: "state",
          value: (r) => r.state + (r.error ? ` (${r.error})` : ""),
          className: (r) => (r.state === "failed" ? "fail" : undefined),
        },
        {
          key: "progress",
          label: "judged",
          numeric: true,
          value: (r) => r.done / Math.max(1, r.total),
          show: (r) => [el("progress", { max: r.total, value: r.done }), ` ${r.done} / ${r.total}`],
        },
        {
          key: "passed",
          label: "passed",
          numeric: true,
          value: (r) => r.passed,
          show: (r) => `${r.passed}${r.done ? ` (${percent(r.passed / r.done)})` : ""}`,
        },
        {
          key: "pass",
          label: "pass@k",
          value: (r) =>
            Object.entries(r.summary?.pass_at_k ?? {})
              .map(([k, v]) => `${k} ${percent(v)}`)
              .join(", "),
        },
        {
          key: "started",
          label: "started",
          value: (r) => r.created_at,
          show: (r) => el("span", { title: when(r.created_at) }, ago(r.created_at)),
        },
        {
          key: "took",
          label: "took",
          numeric: true,
          value: (r) => (r.finished_at ? Date.parse(r.finished_at) - Date.parse(r.created_at) : null),
          show: (r) => (r.finished_at ? duration(Date.parse(r.finished_at) - Date.parse(r.created_at)) : ""),
        },
        {
          key: "actions",
          label: "",
          value: () => "",
          show: (r) => [
            el("button", { onclick: () => void this.opened(r) }, "open"),
            " ",
            el("button", { onclick: () => void this.remove(r) }, r.state === "running" ? "stop" : "delete"),
          ],
        },
      ],
    });
  }

  get element(): HTMLElement {
    return this.table.element;
  }

  /** Lists the runs, and follows them while one goes on. */
  async list(): Promise<void> {
    clearTimeout(this.following);
    let runs: EvaluationRun[];
    try {
      runs = await crucible().evaluationRuns();
    } catch (e) {
      this.say(describe(e), true);
      return;
    }
    this.table.set(runs);
    announce("evalRuns", runs.map((r) => r.state).join(","));
    if (runs.some((r) => r.state === "running")) {
      const tick = () => {
        if (this.visible()) void this.list();
        else this.following = setTimeout(tick, 1000); // while the page is hidden, it waits to be shown again
      };
      this.following = setTimeout(tick, 1000);
    }
  }

  private async remove(run: EvaluationRun): Promise<void> {
    try {
      await crucible().deleteEvaluation(run.id);
    } catch (e) {
      this.say(describe(e), true);
    }
    await this.list();
  }
}
