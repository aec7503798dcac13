/**
 * Every refusal the server answers with, as the API names it (`{"error": {"code", "message"}}`), with its HTTP status
 * and, when asking again is worth it, how long to wait (`Retry-After`).
 */
export class CrucibleError extends Error {
  override readonly name = "CrucibleError";

  constructor(
    /** The HTTP status (0 when the server could not be reached). */
    readonly status: number,
    /** The API's error code: `session_not_found`, `too_many_requests`, `commit_unavailable`, … */
    readonly code: string,
    message: string,
    /** Seconds the server asked to wait before asking again, if it said. */
    readonly retryAfterS?: number,
  ) {
    super(message);
  }

  /** Whether this is the given API error code. */
  is(code: ErrorCode | string): boolean {
    return this.code === code;
  }
}

/** The error codes the API answers with (see docs/api.md). */
export type ErrorCode =
  | "invalid_request"
  | "invalid_json"
  | "unknown_language"
  | "invalid_file"
  | "not_a_file"
  | "file_error"
  | "unauthorized"
  | "permission_denied"
  | "invalid_preview"
  | "forbidden_host"
  | "forbidden_origin"
  | "not_found"
  | "session_not_found"
  | "file_not_found"
  | "process_not_found"
  | "snapshot_not_found"
  | "method_not_allowed"
  | "session_lost"
  | "session_busy"
  | "stdin_closed"
  | "snapshot_exists"
  | "payload_too_large"
  | "cell_too_large"
  | "file_too_large"
  | "quota_exceeded"
  | "uri_too_long"
  | "unsupported_media_type"
  | "invalid_limits"
  | "too_many_files"
  | "runtime_unavailable"
  | "isolation_unavailable"
  | "image_not_found"
  | "egress_not_allowed"
  | "commit_unavailable"
  | "too_many_requests"
  | "too_many_sessions"
  | "too_many_processes"
  | "memory_budget_exhausted"
  | "headers_too_large"
  | "internal"
  | "image_pull_failed"
  | "port_not_listening"
  | "upstream_invalid"
  | "interpreter_unavailable"
  | "commands_unavailable"
  | "ports_unavailable"
  | "interrupted"
  | "shutting_down"
  | "queue_timeout"
  | "replica_name_conflict"
  | "peer_timeout"
  | "image_pulling"
  | "image_pull_timeout"
  | "disk_budget_exhausted"
  | "data_dir_full"
  /** Not the server's: the request was cancelled (its AbortSignal) or timed out on the client. */
  | "aborted"
  | "timeout"
  /** Not the server's: it could not be reached, or answered something that is not the API's JSON. */
  | "unreachable"
  | "bad_response";
