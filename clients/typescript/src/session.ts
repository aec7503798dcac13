import { CrucibleError } from "./errors.js";
import { type CallOptions, events, type Transport } from "./http.js";
import { Terminal } from "./terminal.js";
import type {
  CellResult,
  CommandRequest,
  CommandResult,
  CommitResult,
  FileEntry,
  ForkResult,
  PauseResult,
  PortInfo,
  Preview,
  ProcessInfo,
  ProcessOutput,
  SessionInfo,
  SnapshotInfo,
} from "./types.js";

/** A command's output as it comes, then its result (`Accept: application/x-ndjson`). */
export type CommandEvent =
  | { type: "stdout" | "stderr"; data: string }
  | { type: "result"; result: CommandResult }
  | { type: string; [key: string]: unknown };

/**
 * One session: a persistent interpreter in a long-lived sandbox of its own, its files, commands and background
 * processes, a terminal, ports and preview links; it can be paused, resumed, forked, snapshotted and (in an image)
 * committed. Every call goes to the server; `info` is what the last answer that carried it said.
 */
export class Session {
  constructor(
    private readonly http: Transport,
    readonly id: string,
    public info?: SessionInfo,
  ) {}

  private path(rest = ""): string {
    return `/v1/sessions/${encodeURIComponent(this.id)}${rest}`;
  }

  /** Runs one cell: its statements, then the value of its last expression (`mode` `auto`, `exec` or `single`). */
  run(
    code: string,
    options: CallOptions & { mode?: "auto" | "exec" | "single"; timeoutMs?: number } = {},
  ): Promise<CellResult> {
    return this.http.json(
      "POST",
      this.path("/execute"),
      {
        code,
        mode: options.mode,
        timeout_ms: options.timeoutMs,
      },
      options,
    );
  }

  /** The session as the server shows it now, with the ports something listens on. */
  async refresh(options?: CallOptions): Promise<SessionInfo> {
    this.info = await this.http.json<SessionInfo>("GET", this.path(), undefined, options);
    return this.info;
  }

  /** Asks the running cell to stop (KeyboardInterrupt in Python); whether one was running. */
  async interrupt(options?: CallOptions): Promise<boolean> {
    return (await this.http.json<{ interrupted: boolean }>("POST", this.path("/interrupt"), undefined, options))
      .interrupted;
  }

  /** A fresh interpreter: variables gone, files kept. */
  async restart(options?: CallOptions): Promise<SessionInfo> {
    this.info = await this.http.json<SessionInfo>("POST", this.path("/restart"), undefined, options);
    return this.info;
  }

  /** Deletes the session: its interpreter, its files. */
  async delete(options?: CallOptions): Promise<void> {
    await this.http.json("DELETE", this.path(), undefined, options);
  }

  // -- files: a relative path is under /workspace, an absolute one any path of the session's file system --

  private filePath(path: string, user?: "user" | "root"): string {
    const who = user ? `&user=${user}` : "";
    return path.startsWith("/")
      ? this.path(`/files?path=${encodeURIComponent(path)}${who}`)
      : this.path(`/files/${path.split("/").map(encodeURIComponent).join("/")}${who ? `?${who.slice(1)}` : ""}`);
  }

  /** Writes a file (bytes or text), making the directories above it. */
  async writeFile(
    path: string,
    data: Uint8Array | string,
    options: CallOptions & { user?: "user" | "root" } = {},
  ): Promise<void> {
    const body = typeof data === "string" ? new TextEncoder().encode(data) : data;
    await this.http.read(
      "PUT",
      this.filePath(path, options.user),
      {
        body: body as BodyInit,
        contentType: "application/octet-stream",
      },
      options,
      (r) => r.arrayBuffer(),
    );
  }

  /** A file's bytes. */
  async readFile(path: string, options: CallOptions & { user?: "user" | "root" } = {}): Promise<Uint8Array> {
    return new Uint8Array(
      await this.http.read("GET", this.filePath(path, options.user), {}, options, (r) => r.arrayBuffer()),
    );
  }

  /** A file as UTF-8 text. */
  async readText(path: string, options: CallOptions & { user?: "user" | "root" } = {}): Promise<string> {
    return new TextDecoder().decode(await this.readFile(path, options));
  }

  /** The entries of a directory: `""` the workspace, a relative one under it, or an absolute one. */
  async listFiles(dir = "", options?: CallOptions): Promise<FileEntry[]> {
    const query = dir ? `?dir=${encodeURIComponent(dir)}` : "";
    return (await this.http.json<{ files: FileEntry[] }>("GET", this.path(`/files${query}`), undefined, options)).files;
  }

  /** Deletes a file, link or directory (with what it holds). */
  async deleteFile(path: string, options: CallOptions & { user?: "user" | "root" } = {}): Promise<void> {
    await this.http.json("DELETE", this.filePath(path, options.user), undefined, options);
  }

  // -- commands and processes --

  /** Runs a command (a shell line, or `{argv}` with `env`, `cwd`, `stdin`, `timeout_ms`, `user`) to its end. */
  command(command: string | CommandRequest, options?: CallOptions): Promise<CommandResult> {
    return this.http.json("POST", this.path("/commands"), commandBody(command), options);
  }

  /** Runs a command, its output as it comes, then its `result`. */
  async *commandStream(command: string | CommandRequest, options: CallOptions = {}): AsyncGenerator<CommandEvent> {
    const open = await this.http.open(
      "POST",
      this.path("/commands"),
      {
        body: JSON.stringify(commandBody(command)),
        contentType: "application/json",
        accept: "application/x-ndjson",
      },
      options,
    );
    try {
      yield* events<CommandEvent>(open.response, open.signal);
    } finally {
      open.close();
    }
  }

  /**
   * Starts a command in the background: it answers at once with the process, which runs on (`stdinOpen` keeps its
   * stdin open for `writeStdin`; `pty` puts it on a terminal).
   */
  startProcess(
    command: string | CommandRequest,
    options: CallOptions & { stdinOpen?: boolean; pty?: { rows: number; cols: number } } = {},
  ): Promise<ProcessInfo> {
    return this.http.json(
      "POST",
      this.path("/commands"),
      {
        ...commandBody(command),
        background: true,
        stdin_open: options.stdinOpen,
        pty: options.pty,
      },
      options,
    );
  }

  /** The background processes, running and ended, oldest first. */
  async processes(options?: CallOptions): Promise<ProcessInfo[]> {
    return (await this.http.json<{ processes: ProcessInfo[] }>("GET", this.path("/processes"), undefined, options))
      .processes;
  }

  /** A process's output from `from` (0: the oldest kept; then the last answer's `next`), waiting up to `waitMs`. */
  processOutput(pid: number, from = 0, waitMs = 0, options?: CallOptions): Promise<ProcessOutput> {
    return this.http.json(
      "GET",
      this.path(`/processes/${pid}/output?from=${from}&wait_ms=${waitMs}`),
      undefined,
      options,
    );
  }

  /** Writes to a background process's stdin (one started with `stdinOpen`), closing it when asked. */
  writeStdin(
    pid: number,
    data: string,
    close = false,
    options?: CallOptions,
  ): Promise<{ written: number; closed: boolean }> {
    return this.http.json("POST", this.path(`/processes/${pid}/stdin`), { data, close }, options);
  }

  /** Signals a background process's group (`TERM`, `KILL`, `INT`…); whether it was still running. */
  async signal(pid: number, signal = "TERM", options?: CallOptions): Promise<boolean> {
    return (
      await this.http.json<{ signalled: boolean }>("POST", this.path(`/processes/${pid}/signal`), { signal }, options)
    ).signalled;
  }

  /** Sizes the terminal of a process started with `pty`. */
  async resize(pid: number, rows: number, cols: number, options?: CallOptions): Promise<boolean> {
    return (
      await this.http.json<{ resized: boolean }>("POST", this.path(`/processes/${pid}/resize`), { rows, cols }, options)
    ).resized;
  }

  /**
   * A terminal in the session's sandbox over its WebSocket: a login shell (`rows`, `cols`), or the terminal of a
   * process started with `pty` (`pid`).
   */
  terminal(options: { rows?: number; cols?: number; pid?: number } = {}): Promise<Terminal> {
    const query = new URLSearchParams();
    for (const [k, v] of Object.entries(options)) {
      if (v !== undefined) query.set(k, String(v));
    }
    return Terminal.open(this.http, this.path(`/terminal${query.size ? `?${query}` : ""}`));
  }

  // -- ports and network --

  /** The TCP ports something listens on in the sandbox now, each with the path that proxies to it. */
  async ports(options?: CallOptions): Promise<PortInfo[]> {
    return (await this.http.json<{ ports: PortInfo[] }>("GET", this.path("/ports"), undefined, options)).ports;
  }

  /** The URL of `path` on `port` in the sandbox, through the server (the token goes in the Authorization header). */
  portUrl(port: number, path = "/"): string {
    return `${this.http.baseUrl}${this.path(`/ports/${port}`)}${path.startsWith("/") ? path : `/${path}`}`;
  }

  /** A signed link to `port` a browser opens without a token, for `ttlS` seconds. */
  preview(port: number, ttlS = 3600, options?: CallOptions): Promise<Preview> {
    return this.http.json("POST", this.path("/previews"), { port, ttl_s: ttlS }, options);
  }

  /** Narrows the session's egress for good: `[]` (the default) locks it. */
  async lockNetwork(allow: string[] = [], options?: CallOptions): Promise<SessionInfo> {
    this.info = await this.http.json<SessionInfo>("POST", this.path("/network"), { allow }, options);
    return this.info;
  }

  // -- pause, fork, snapshot, commit --

  /** Releases the session's memory, keeping the rest (behind gVisor its sandbox is saved whole first). */
  pause(options?: CallOptions): Promise<PauseResult> {
    return this.http.json("POST", this.path("/pause"), undefined, options);
  }

  /** Brings a paused session back now (its next call would too); `restored` says what came back. */
  resume(options?: CallOptions): Promise<PauseResult> {
    return this.http.json("POST", this.path("/resume"), undefined, options);
  }

  /** `count` new sessions, each a copy of this one (its files, and behind gVisor its memory). */
  async fork(count = 1, options?: CallOptions): Promise<Session[]> {
    const forked = await this.http.json<ForkResult>("POST", this.path("/fork"), { count }, options);
    return forked.forks.map((info) => new Session(this.http, info.id, info));
  }

  /** A named, durable snapshot: `crucible.createSession({ snapshot: name })` makes sessions from it. */
  snapshot(name: string, options?: CallOptions): Promise<SnapshotInfo> {
    return this.http.json("POST", this.path("/snapshots"), { name }, options);
  }

  /** A session in an image, committed as a new image `tag` (its `/workspace` one layer over its image). */
  commit(tag: string, options?: CallOptions): Promise<CommitResult> {
    return this.http.json("POST", this.path("/commit"), { tag }, options);
  }
}

function commandBody(command: string | CommandRequest): CommandRequest {
  if (typeof command === "string") {
    return { command };
  }
  if (!command.command && !command.argv) {
    throw new CrucibleError(0, "invalid_request", "a command needs `command` (a shell line) or `argv`");
  }
  return command;
}
