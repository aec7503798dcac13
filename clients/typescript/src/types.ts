/**
 * The wire shapes of the Crucible HTTP API (docs/api.md; `GET /openapi.json` is the whole contract), under the names
 * the SDK has always exported. The shapes themselves are `wire.ts`, generated from the server's OpenAPI document
 * (`npm run generate`); what is written here is only what the document does not name: aliases, the parts of a
 * schema that have a name of their own in the SDK, and the few shapes (stream events, tool outcomes) the SDK types
 * more closely than the document does.
 */
import type * as wire from "./wire.js";

export type {
  CellResult,
  CommandResult,
  CommitResult,
  EvaluateRequest,
  EvaluateResult,
  EvaluationRequest,
  ExecuteRequest,
  ExecuteResult,
  ForkResult,
  Limits,
  PauseResult,
  PortInfo,
  Preview,
  ProcessOutput,
  RewardRequest,
  RewardResult,
  SessionLimits,
  Terminal,
} from "./wire.js";

/** How a run ended. */
export type Verdict = wire.ExecuteResult["status"];

/** A file placed in the sandbox before a run. */
export type FileInput = wire.File;

/** `host[:port]` entries within the operator's allowlist; `[]` none. */
export type NetworkRequest = wire.Network;

/** The egress a sandbox was granted and the connections its proxy judged. */
export type NetworkReport = wire.NetworkReport;

/** How a finished program or command ended, and what it printed (each stream up to its cap). */
export type Ended = Pick<
  wire.CommandResult,
  "exit_code" | "signal" | "stdout" | "stderr" | "stdout_truncated" | "stderr_truncated"
>;

/** One event of a streamed run: output as it comes, then the result. */
export type StreamEvent =
  | { type: "stdout" | "stderr"; data: string }
  | { type: "result"; result: wire.ExecuteResult }
  | { type: string; [key: string]: unknown };

/** A runtime of `GET /v1/runtimes`; a newer server may say more. */
export interface RuntimeInfo extends wire.Runtime {
  [key: string]: unknown;
}

/** One test case of an evaluation: test code, stdin, expected stdout. */
export type TestCase = wire.EvaluateRequest["testcases"][number];

/** One test case's verdict. */
export type CaseResult = wire.EvaluateResult["results"][number];

/**
 * A command as `Session.command` and `commandStream` run it to its end; `startProcess` adds the background fields
 * (`background`, `stdin_open`, `pty`) itself.
 */
export type CommandRequest = Omit<wire.CommandRequest, "background" | "stdin_open" | "pty">;

/** `POST /v1/sessions`. */
export type CreateSessionRequest = wire.SessionCreate;

/** A session as the server describes it. */
export type SessionInfo = wire.Session;

/** A rich output of a cell (an image, HTML…). */
export type DisplayData = NonNullable<wire.CellResult["display"]>[number];

/** A background process; a newer server may say more. */
export interface ProcessInfo extends wire.ProcessInfo {
  [key: string]: unknown;
}

/** A file or directory of a session; a newer server may say more. */
export interface FileEntry extends wire.FileEntry {
  [key: string]: unknown;
}

/** A dataset evaluation run by the server. */
export type EvaluationRun = wire.Evaluation;

/** A named snapshot of a session. */
export type SnapshotInfo = wire.Snapshot;

/** A tool call's outcome as a model receives it: content blocks (text, images), and whether it is an error. */
export interface ToolOutcome {
  content: ({ type: "text"; text: string } | { type: "image"; data: string; mime_type: string })[];
  is_error: boolean;
  result?: unknown;
  session_id?: string;
}
