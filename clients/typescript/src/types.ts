/** The wire shapes of the Crucible HTTP API (docs/api.md; `GET /openapi.json` is the whole contract). */

export type Verdict =
  | "ok" | "runtime_error" | "timeout" | "memory_limit" | "output_limit" | "compile_error" | "sandbox_error";

export interface Limits {
  timeout_ms?: number;
  cpu_ms?: number;
  memory_mb?: number;
  output_bytes?: number;
  pids?: number;
}

export interface FileInput {
  path: string;
  content: string;
  encoding?: "utf8" | "base64";
}

export interface NetworkRequest {
  /** `host[:port]` entries within the operator's allowlist; `[]` none. */
  allow: string[];
}

export interface ExecuteRequest {
  language: string;
  code: string;
  stdin?: string;
  args?: string[];
  files?: FileInput[];
  limits?: Limits;
  image?: string;
  network?: NetworkRequest;
  isolation?: "namespaces" | "gvisor";
}

/** How a finished program or command ended, and what it printed (each stream up to its cap). */
export interface Ended {
  exit_code: number | null;
  signal: number | null;
  stdout: string;
  stderr: string;
  stdout_truncated: boolean;
  stderr_truncated: boolean;
}

export interface ExecuteResult extends Ended {
  status: Verdict;
  wall_ms: number;
  cpu_ms: number;
  memory_bytes: number;
  compile?: ExecuteResult;
  image_digest?: string;
  isolation?: string;
  network?: unknown;
  /** Why the sandbox could not run the program (status `sandbox_error`); null otherwise. */
  message?: string | null;
}

/** One event of a streamed run: output as it comes, then the result. */
export type StreamEvent =
  | { type: "stdout" | "stderr"; data: string }
  | { type: "result"; result: ExecuteResult }
  | { type: string; [key: string]: unknown };

export interface RuntimeInfo {
  language: string;
  aliases: string[];
  version: string;
  available: boolean;
  reason?: string;
  /** The image a runtime runs in, and its digest; absent for the host's runtimes. */
  image?: string | null;
  image_digest?: string | null;
  /** The wall its programs run behind. */
  isolation?: "namespaces" | "gvisor";
  [key: string]: unknown;
}

export interface TestCase {
  code?: string;
  stdin?: string;
  expect?: string;
}

export interface EvaluateRequest {
  language: string;
  code: string;
  testcases: TestCase[];
  compare?: { mode: string; abs_tol?: number; rel_tol?: number };
  run_all_cases?: boolean;
  limits?: Limits;
  files?: FileInput[];
}

export interface CaseResult {
  passed: boolean;
  status: string;
  score: number;
  reason: string;
  stdout: string;
  stderr: string;
  exit_code: number | null;
  wall_ms: number;
}

export interface EvaluateResult {
  results: CaseResult[];
  passed: number;
  total: number;
  score: number;
  compile?: ExecuteResult;
}

export interface RewardRequest {
  messages: { role: string; content: string }[];
  expected_output?: string;
  original_messages?: { role: string; content: string }[];
  language?: string;
  test_cases?: { input: string; expected_output: string }[];
  timeout_ms?: number;
  memory_mb?: number;
}

export interface RewardResult {
  score: number;
  metrics: Record<string, { score: number; reason: string }>;
}

export interface SessionLimits {
  memory_mb?: number;
  pids?: number;
  cpus?: number;
  timeout_ms?: number;
  output_bytes?: number;
}

export interface CreateSessionRequest {
  language?: string;
  limits?: SessionLimits;
  idle_timeout_s?: number;
  restore?: "none" | "replay";
  image?: string;
  network?: NetworkRequest;
  on_idle?: "delete" | "pause";
  /** Make the session from this snapshot of the token's. */
  snapshot?: string;
  /** The tier its sandboxes run behind: at least its runtime's (docs/isolation.md). */
  isolation?: "namespaces" | "gvisor";
}

export interface SessionInfo {
  id: string;
  language: string;
  created_at: string;
  expires_at: string;
  last_used_at: string;
  idle_timeout_s: number;
  restore: "none" | "replay";
  state: "running" | "dormant" | "paused";
  limits: SessionLimits;
  image: string | null;
  image_digest: string | null;
  network: unknown;
  processes: ProcessInfo[];
  ports?: PortInfo[] | null;
  on_idle: "delete" | "pause";
  /** In the answer that made it from a snapshot: what came back. */
  restored?: "memory" | "replay" | "files";
  /** The tier its sandboxes run behind; absent for a session recorded before sessions had one. */
  isolation?: "namespaces" | "gvisor";
}

export interface DisplayData {
  mime: string;
  data: string;
}

export interface CellResult {
  status: "ok" | "error" | "timeout" | "incomplete" | string;
  stdout: string;
  stderr: string;
  stdout_truncated: boolean;
  stderr_truncated: boolean;
  result?: string | null;
  display?: DisplayData[];
  error?: { name: string; message: string; traceback: string } | null;
  execution_count: number;
  wall_ms: number;
  restarted: boolean;
  resumed: boolean;
  replayed?: number | null;
}

export interface CommandRequest {
  command?: string;
  argv?: string[];
  env?: Record<string, string>;
  cwd?: string;
  timeout_ms?: number;
  stdin?: string;
  user?: "user" | "root";
}

export interface CommandResult extends Ended {
  timed_out: boolean;
  duration_ms: number;
  pid: number;
}

export interface ProcessInfo {
  pid: number;
  argv: string[];
  cwd: string;
  started_at: string;
  running: boolean;
  exit_code: number | null;
  signal: number | null;
  timed_out: boolean;
  lost: boolean;
  stdin_open: boolean;
  output_bytes: number;
  dropped_bytes: number;
  pty: boolean;
  /** Terminal WebSockets attached to it now. */
  terminals: number;
  [key: string]: unknown;
}

export interface ProcessOutput {
  stdout: string;
  stderr: string;
  from: number;
  next: number;
  missed_bytes: number;
  ended: boolean;
  process: ProcessInfo;
}

export interface FileEntry {
  path: string;
  type: "file" | "directory" | "symlink" | "other";
  size: number;
  modified_at: string;
  [key: string]: unknown;
}

export interface PortInfo {
  port: number;
  path: string;
}

export interface Preview {
  url: string;
  port: number;
  expires_at: string;
  host?: string;
}

export interface PauseResult {
  id: string;
  state: "paused" | "running";
  keeps?: "memory" | "replay" | "files";
  restored?: "memory" | "replay" | "files";
  replayed?: number;
  took_ms: number;
}

export interface ForkResult {
  id: string;
  forks: SessionInfo[];
  keeps: "memory" | "replay" | "files";
  took_ms: number;
}

/** `POST /v1/evaluations`: a dataset as `crucible eval dataset` takes it, its files as their text. */
export interface EvaluationRequest {
  format: "humaneval" | "mbpp" | "stdio";
  /** The problems file's JSONL. */
  problems: string;
  /** The samples file's JSONL (`{task_id, completion}` a line); absent: the dataset's reference solutions. */
  samples?: string;
  k?: number[];
  timeout_ms?: number;
  image?: string;
}

/** A dataset evaluation run by the server. */
export interface EvaluationRun {
  id: string;
  format: string;
  state: "running" | "done" | "failed" | "stopped";
  total: number;
  done: number;
  passed: number;
  k: number[];
  created_at: string;
  finished_at?: string;
  /** The results file's summary (`pass_at_k`, `problems`, `samples`, `passed`, …), once done. */
  summary?: { pass_at_k: Record<string, number>; [key: string]: unknown };
  error?: string;
}

export interface SnapshotInfo {
  name: string;
  session_id: string;
  language: string;
  image: string | null;
  keeps: "memory" | "replay" | "files";
  bytes: number;
  created_at: string;
  took_ms?: number;
}

export interface CommitResult {
  image: string;
  digest: string;
  id: string;
  base: string;
  layer_bytes: number;
  entries: number;
  whiteouts: number;
  took_ms: number;
}

/** A tool call's outcome as a model receives it: content blocks (text, images), and whether it is an error. */
export interface ToolOutcome {
  content: ({ type: "text"; text: string } | { type: "image"; data: string; mime_type: string })[];
  is_error: boolean;
  result?: unknown;
  session_id?: string;
}
