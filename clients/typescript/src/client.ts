import { CrucibleError } from "./errors.js";
import { type CallOptions, type ClientOptions, events, Transport } from "./http.js";
import { Session } from "./session.js";
import type {
  CreateSessionRequest,
  EvaluateRequest,
  EvaluateResult,
  EvaluationRequest,
  EvaluationRun,
  ExecuteRequest,
  ExecuteResult,
  RewardRequest,
  RewardResult,
  RuntimeInfo,
  SessionInfo,
  SnapshotInfo,
  StreamEvent,
  ToolOutcome,
} from "./types.js";

/**
 * A client of one Crucible server: stateless runs (streamed or not), runtimes, evaluation (one program, or a dataset run
 * by the server), rewards, sessions, snapshots and tool calls. Every failure is a `CrucibleError` with the API's code; a refusal that says when to ask again
 * (`Retry-After`) is asked again; every call takes an `AbortSignal`.
 *
 * ```ts
 * const crucible = new Crucible({ baseUrl: "http://127.0.0.1:8080" });
 * const run = await crucible.execute({ language: "python", code: "print(6 * 7)" });
 * run.stdout; // "42\n"
 * ```
 */
export class Crucible {
  /** The HTTP core, for calls this SDK does not wrap yet. */
  readonly http: Transport;

  constructor(options: ClientOptions = {}) {
    this.http = new Transport(options);
  }

  /** Runs a program in a fresh sandbox to its end. */
  execute(request: ExecuteRequest, options?: CallOptions): Promise<ExecuteResult> {
    return this.http.json("POST", "/v1/execute", request, options);
  }

  /** Runs a program, its output as it comes (`stdout`, `stderr` events), then its `result`. */
  async *executeStream(request: ExecuteRequest, options: CallOptions = {}): AsyncGenerator<StreamEvent> {
    const open = await this.http.open(
      "POST",
      "/v1/execute",
      {
        body: JSON.stringify(request),
        contentType: "application/json",
        accept: "application/x-ndjson",
      },
      options,
    );
    try {
      yield* events<StreamEvent>(open.response, open.signal);
    } finally {
      open.close();
    }
  }

  /** The runtimes, their versions and whether each is available. */
  runtimes(options?: CallOptions): Promise<RuntimeInfo[]> {
    return this.http.json("GET", "/v1/runtimes", undefined, options);
  }

  /** Judges a program against test cases. */
  evaluate(request: EvaluateRequest, options?: CallOptions): Promise<EvaluateResult> {
    return this.http.json("POST", "/v1/evaluate", request, options);
  }

  /** Scores one completion (a reward for RL). */
  reward(request: RewardRequest, options?: CallOptions): Promise<RewardResult> {
    return this.http.json("POST", "/v1/reward", request, options);
  }

  /** Scores many completions in one call, run in parallel by the server. */
  rewardBatch(items: RewardRequest[], options?: CallOptions): Promise<{ results: RewardResult[]; mean_score: number }> {
    return this.http.json("POST", "/v1/reward/batch", { items }, options);
  }

  /** A new session (a persistent interpreter in a sandbox of its own), or one made from `snapshot`. */
  async createSession(request: CreateSessionRequest = {}, options?: CallOptions): Promise<Session> {
    const info = await this.http.json<SessionInfo>("POST", "/v1/sessions", request, options);
    return new Session(this.http, info.id, info);
  }

  /** A handle on an existing session (nothing is asked of the server until a call). */
  session(id: string): Session {
    return new Session(this.http, id);
  }

  /** This token's sessions (on the replica that answers). */
  async sessions(options?: CallOptions): Promise<SessionInfo[]> {
    return (await this.http.json<{ sessions: SessionInfo[] }>("GET", "/v1/sessions", undefined, options)).sessions;
  }

  /** This token's snapshots, oldest first. */
  async snapshots(options?: CallOptions): Promise<SnapshotInfo[]> {
    return (await this.http.json<{ snapshots: SnapshotInfo[] }>("GET", "/v1/snapshots", undefined, options)).snapshots;
  }

  /** Deletes a snapshot (sessions made from it are not touched). */
  async deleteSnapshot(name: string, options?: CallOptions): Promise<void> {
    await this.http.json("DELETE", `/v1/snapshots/${encodeURIComponent(name)}`, undefined, options);
  }

  /**
   * Runs a dataset evaluation on the server in the background (`crucible eval dataset`): the problems and samples
   * files as their JSONL text. Follow it with `evaluationRun(id)`; its results with `evaluationResults(id)`.
   */
  startEvaluation(request: EvaluationRequest, options?: CallOptions): Promise<EvaluationRun> {
    return this.http.json("POST", "/v1/evaluations", request, options);
  }

  /** This token's evaluations, newest first. */
  async evaluationRuns(options?: CallOptions): Promise<EvaluationRun[]> {
    return (await this.http.json<{ evaluations: EvaluationRun[] }>("GET", "/v1/evaluations", undefined, options))
      .evaluations;
  }

  /** One evaluation: its state, progress and (once done) summary. */
  evaluationRun(id: string, options?: CallOptions): Promise<EvaluationRun> {
    return this.http.json("GET", `/v1/evaluations/${encodeURIComponent(id)}`, undefined, options);
  }

  /** Waits until the evaluation is no longer running (asking every `everyMs`), and answers it. */
  async awaitEvaluation(id: string, everyMs = 1000, options?: CallOptions): Promise<EvaluationRun> {
    for (;;) {
      const run = await this.evaluationRun(id, options);
      if (run.state !== "running") return run;
      await new Promise((resolve) => setTimeout(resolve, everyMs));
      if (options?.signal?.aborted) throw new CrucibleError(0, "aborted", "the wait was aborted");
    }
  }

  /** The evaluation's results file so far (`--out`'s lines): one object a judged sample, then `{summary}`. */
  async evaluationResults(id: string, options?: CallOptions): Promise<Array<Record<string, unknown>>> {
    const text = await this.http.read(
      "GET",
      `/v1/evaluations/${encodeURIComponent(id)}/results`,
      { accept: "application/x-ndjson" },
      options ?? {},
      (response) => response.text(),
    );
    return text
      .split("\n")
      .filter((line) => line.trim())
      .map((line) => JSON.parse(line));
  }

  /** Stops the evaluation if it goes on, and deletes it with its files. */
  async deleteEvaluation(id: string, options?: CallOptions): Promise<void> {
    await this.http.json("DELETE", `/v1/evaluations/${encodeURIComponent(id)}`, undefined, options);
  }

  /**
   * The tool definitions as the server renders them for `format`: `openai`, `openai-functions`, `anthropic` or `mcp`;
   * `set` `stateless`, `session` or `all`.
   */
  tools(
    format: "openai" | "openai-functions" | "anthropic" | "mcp",
    set: "stateless" | "session" | "all" = "all",
    options?: CallOptions,
  ): Promise<unknown[]> {
    return this.http.json(
      "GET",
      `/v1/tools?format=${encodeURIComponent(format)}&set=${encodeURIComponent(set)}`,
      undefined,
      options,
    );
  }

  /**
   * Runs one tool call as a model made it (`arguments` a JSON string or an object). A model's mistake (an unknown
   * tool, bad arguments) comes back as an outcome with `is_error`, not as an exception.
   */
  callTool(
    name: string,
    args: string | Record<string, unknown>,
    sessionId?: string,
    options?: CallOptions,
  ): Promise<ToolOutcome> {
    return this.http.json("POST", "/v1/tools/call", { name, arguments: args, session_id: sessionId ?? null }, options);
  }

  /** `GET /healthz`: running and queued runs, the pool, memory, uptime. */
  health(options?: CallOptions): Promise<Record<string, unknown>> {
    return this.http.json("GET", "/healthz", undefined, options);
  }
}
