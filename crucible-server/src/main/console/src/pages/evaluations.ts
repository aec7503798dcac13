// Evaluations: a results file read in the tab (sent nowhere), or problems and samples run on the server; the summary
// with pass@k, every sample in a table that sorts and filters, one sample beside its problem.
import type { EvaluationRequest } from "@crucible/sdk";
import { crucible, describe } from "../api/client";
import { announce, el, statusLine } from "../ui/dom";
import { count, duration, percent } from "../ui/format";
import { Table } from "../ui/table";
import {
  FILTERS,
  jsonl,
  type Problem,
  type ResultRow,
  readProblems,
  readResults,
  readSamples,
  type Summary,
} from "./evaluations/results";
import { RunsPanel } from "./evaluations/runs";
import type { Page } from "./page";

export function evaluationsPage(): Page {
  let section: HTMLElement;
  let samples = new Map<string, string>();
  let problems = new Map<string, Problem>();
  const files: Record<string, string> = {};
  const status = statusLine("eval-status");
  const summary = el("dl", { id: "eval-summary", class: "facts wide" });
  const sample = el("div", { id: "eval-sample", class: "sample" }, el("p", { class: "status" }, "Pick a sample."));
  const filter = el(
    "select",
    { id: "eval-filter", "aria-label": "filter" },
    Object.entries(FILTERS).map(([value, f]) => el("option", { value }, f.label)),
  );
  const table = new Table<ResultRow>({
    id: "eval-table",
    filter: "filter by task, status or reason",
    key: (r) => `${r.task_id}#${r.sample}`,
    empty: "Open a results file, or a run of the server's.",
    shown: (n) => announce("evalRows", n),
    open: (r) => showSample(r),
    columns: [
      { key: "task", label: "task", value: (r) => r.task_id },
      { key: "sample", label: "sample", numeric: true, value: (r) => r.sample },
      {
        key: "verdict",
        label: "verdict",
        value: (r) => (r.passed ? "passed" : "failed"),
        className: (r) => (r.passed ? "pass" : "fail"),
      },
      { key: "status", label: "status", value: (r) => r.status },
      { key: "why", label: "why", value: (r) => r.result ?? "" },
      { key: "time", label: "time", numeric: true, value: (r) => r.wall_ms, show: (r) => duration(r.wall_ms) },
    ],
  });
  const runs = new RunsPanel(
    () => !section.hidden,
    async (run) => {
      try {
        show(readResults(await crucible().evaluationResults(run.id)));
        announce("evalOpened", run.id);
      } catch (e) {
        status.say(describe(e), true);
      }
    },
    status.say,
  );
  filter.addEventListener("change", () => table.where(FILTERS[filter.value].keep));

  function show(results: { rows: ResultRow[]; summary: Summary | null }): void {
    table.set(results.rows);
    const s = results.summary;
    summary.replaceChildren(
      ...(s
        ? [
            ["problems", count(s.problems)],
            ["samples", count(s.samples)],
            ["passed", `${count(s.passed)} (${percent(s.passed / Math.max(1, s.samples))})`],
            ...Object.entries(s.pass_at_k ?? {}).map(([k, v]) => [k, percent(v)]),
          ]
        : []
      ).flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]),
    );
  }

  /** One sample beside its problem: its code, its verdict and reason, and the tests. */
  function showSample(r: ResultRow): void {
    const problem = problems.get(r.task_id);
    const parts: [string, string][] = [
      ["verdict", `${r.passed ? "passed" : "failed"} · ${r.status} · ${r.result ?? ""} · ${duration(r.wall_ms)}`],
      [
        "the sample's code",
        (problem?.prompt ?? "") + (samples.get(`${r.task_id}#${r.sample}`) ?? "(pick the samples file to see it)"),
      ],
      ["the tests", problem?.test ?? (problem?.test_list ?? []).join("\n")],
    ];
    sample.replaceChildren(
      el("h2", {}, `${r.task_id} · sample ${r.sample}`),
      ...parts.flatMap(([title, value]) => [el("h3", {}, title), el("pre", { class: "out" }, value)]),
    );
  }

  function picker(id: string, label: string, read: (lines: Record<string, unknown>[]) => void): HTMLElement {
    const input = el("input", { id, type: "file", accept: ".jsonl,.json", "aria-label": label });
    input.addEventListener("change", async () => {
      const file = input.files?.[0];
      if (!file) return;
      try {
        files[id] = await file.text();
        read(jsonl(files[id]));
      } catch (e) {
        status.say(`${file.name}: ${describe(e)}`, true);
      }
    });
    return el("label", {}, `${label[0].toUpperCase()}${label.slice(1)} `, input);
  }

  async function start(form: {
    format: HTMLSelectElement;
    k: HTMLInputElement;
    timeout: HTMLInputElement;
  }): Promise<void> {
    if (!files["eval-problems"]) {
      status.say("Pick a problems file (and a samples file, unless the dataset has solutions).", true);
      return;
    }
    try {
      const run = await crucible().startEvaluation({
        format: form.format.value as EvaluationRequest["format"],
        problems: files["eval-problems"],
        samples: files["eval-samples"],
        k: form.k.value
          .split(",")
          .map((k) => Number(k.trim()))
          .filter((k) => k > 0),
        timeout_ms: Math.round(Number(form.timeout.value) * 1000),
      });
      status.say(`started ${run.id}: ${run.total} samples`);
    } catch (e) {
      status.say(describe(e), true);
    }
    await runs.list();
  }

  return {
    id: "evaluations",
    title: "Evaluations",
    aliases: ["eval"],
    mount(s) {
      section = s;
      const form = {
        format: el(
          "select",
          { id: "eval-format", "aria-label": "format" },
          el("option", {}, "humaneval"),
          el("option", {}, "mbpp"),
          el("option", {}, "stdio"),
        ),
        k: el("input", { id: "eval-k", value: "1", size: 8, "aria-label": "k" }),
        timeout: el("input", {
          id: "eval-timeout",
          type: "number",
          min: 0.1,
          max: 120,
          step: 0.1,
          value: 10,
          "aria-label": "timeout in seconds",
        }),
      };
      section.append(
        el("h1", {}, "Evaluations"),
        el(
          "p",
          {},
          "Open the ",
          el("code", {}, "--out"),
          " file of ",
          el("code", {}, "crucible eval dataset"),
          " (and, to see each sample's code, its samples and problems files): they are read in this tab and sent",
          " nowhere. Or run the problems and samples on this server: the run goes on when the tab closes, and its",
          " results open here.",
        ),
        el(
          "div",
          { class: "bar" },
          picker("eval-results", "results", (lines) => show(readResults(lines))),
          picker("eval-samples", "samples", (lines) => {
            samples = readSamples(lines);
          }),
          picker("eval-problems", "problems", (lines) => {
            problems = readProblems(lines);
          }),
        ),
        el(
          "form",
          {
            id: "eval-start",
            class: "bar",
            onsubmit: (e: Event) => {
              e.preventDefault();
              void start(form);
            },
          },
          el("label", {}, "Format ", form.format),
          el("label", {}, "k ", form.k),
          el("label", {}, "Timeout (s) ", form.timeout),
          el("button", { type: "submit" }, "Run the problems and samples on the server"),
        ),
        status.element,
        el("h2", {}, "Runs on this server"),
        runs.element,
        el("h2", {}, "Results"),
        summary,
        el("div", { class: "bar" }, el("label", {}, "Show ", filter)),
        el("div", { class: "columns" }, el("div", { class: "main" }, table.element), sample),
      );
      void runs.list();
    },
  };
}
