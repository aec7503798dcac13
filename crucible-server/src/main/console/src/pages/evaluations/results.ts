// An evaluation's results as `crucible eval dataset --out` writes them (and /v1/evaluations/{id}/results answers):
// one line a judged sample, and a summary line; beside them the samples and problems files, for each sample's code.

/** One judged sample. */
export interface ResultRow {
  task_id: string;
  sample: number;
  passed: boolean;
  status: string;
  result?: string | null;
  wall_ms?: number | null;
}

/** The summary line: problems, samples, passed, pass@k. */
export interface Summary {
  problems: number;
  samples: number;
  passed: number;
  pass_at_k?: Record<string, number>;
}

/** A problem as its file has it (HumanEval's prompt and test, MBPP's test list). */
export interface Problem {
  task_id: string;
  prompt?: string;
  test?: string;
  test_list?: string[];
}

export function jsonl(text: string): Record<string, unknown>[] {
  return text
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** A results file's lines: its rows by task then sample, and its summary. */
export function readResults(lines: Record<string, unknown>[]): { rows: ResultRow[]; summary: Summary | null } {
  const summary = (lines.find((l) => l.summary)?.summary as Summary | undefined) ?? null;
  const rows = (lines.filter((l) => l.task_id !== undefined) as unknown as ResultRow[]).sort(
    (a, b) => a.task_id.localeCompare(b.task_id, undefined, { numeric: true }) || a.sample - b.sample,
  );
  return { rows, summary };
}

/** A samples file: the n-th sample of a task, in file order, is its `sample` number. */
export function readSamples(lines: Record<string, unknown>[]): Map<string, string> {
  const samples = new Map<string, string>();
  const seen = new Map<string, number>();
  for (const l of lines) {
    const task = String(l.task_id);
    const n = seen.get(task) ?? 0;
    seen.set(task, n + 1);
    samples.set(`${task}#${n}`, String(l.completion ?? l.code ?? l.solution ?? ""));
  }
  return samples;
}

export function readProblems(lines: Record<string, unknown>[]): Map<string, Problem> {
  return new Map(lines.map((l) => [String(l.task_id), l as unknown as Problem]));
}

/** The filters of the samples table. */
export const FILTERS: Record<string, { label: string; keep: (r: ResultRow) => boolean }> = {
  all: { label: "all", keep: () => true },
  failed: { label: "failed", keep: (r) => !r.passed },
  passed: { label: "passed", keep: (r) => r.passed },
  timeout: { label: "timeout", keep: (r) => r.status === "timeout" },
  unproven: { label: "tests did not run", keep: (r) => /did not run/.test(r.result ?? "") },
  error: { label: "runtime_error", keep: (r) => r.status === "runtime_error" },
};
