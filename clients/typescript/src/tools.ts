import type { Crucible } from "./client.js";
import type { CallOptions } from "./http.js";
import type { ToolOutcome } from "./types.js";

/** The tools that work in no session (or make their own). */
const UNBOUND = new Set(["run_code", "list_runtimes", "create_session"]);

/** One of the server's tools, framework-neutral: what a model is told, and how a call runs. */
export interface ToolDefinition {
  name: string;
  description: string;
  /** The arguments' JSON Schema (an object schema). */
  parameters: Record<string, unknown>;
  /** Runs a call the model made; a model's mistake comes back as an outcome with `is_error`, never thrown. */
  call(args: Record<string, unknown>, options?: CallOptions): Promise<ToolOutcome>;
}

/** Which tools, bound to what. */
export interface ToolsOptions {
  /**
   * `stateless` (`run_code`: a fresh sandbox a call), `session` (a persistent interpreter, commands and files: the
   * session is made at the first call unless `sessionId` names one), or `all`.
   */
  set?: "stateless" | "session" | "all";
  /** The session the session tools work in; default one made for these tools at their first call. */
  sessionId?: string;
  /** What a session made for these tools is created with. */
  language?: string;
}

/**
 * The server's tool definitions (the same every Crucible client and the MCP endpoint give), each bound to a call of
 * `POST /v1/tools/call` through `crucible`. The frameworks' adapters wrap these.
 */
export async function toolDefinitions(crucible: Crucible, options: ToolsOptions = {}): Promise<ToolDefinition[]> {
  const set = options.set ?? "all";
  const listed = (await crucible.tools("openai", set)) as {
    function: { name: string; description: string; parameters: Record<string, unknown> };
  }[];
  let session: Promise<string> | undefined = options.sessionId ? Promise.resolve(options.sessionId) : undefined;
  const sessionId = () => {
    session ??= crucible.createSession({ language: options.language }).then((s) => s.id);
    return session;
  };
  return listed.map(({ function: f }) => ({
    name: f.name,
    description: f.description,
    parameters: f.parameters,
    call: async (args: Record<string, unknown>, callOptions?: CallOptions) =>
      crucible.callTool(f.name, args, UNBOUND.has(f.name) ? undefined : await sessionId(), callOptions),
  }));
}

/** The text parts of an outcome, one after the other. */
export function textOf(outcome: ToolOutcome): string {
  return outcome.content
    .map((c) => (c.type === "text" ? c.text : ""))
    .filter((t) => t)
    .join("\n");
}
