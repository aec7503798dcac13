/**
 * The TypeScript SDK of Crucible: `new Crucible({ baseUrl, token })` for runs, evaluation, rewards, sessions, snapshots
 * and tool calls; `@crucible/sdk/ai`, `@crucible/sdk/langchain` and `@crucible/sdk/openai-agents` give the same tools to
 * those agent frameworks. No dependency beyond the platform (`fetch`, streams, `WebSocket`): Node 20+ and browsers.
 */
export { Crucible } from "./client.js";
export type { ErrorCode } from "./errors.js";
export { CrucibleError } from "./errors.js";
export type { CallOptions, ClientOptions } from "./http.js";
export type { CommandEvent } from "./session.js";
export { Session } from "./session.js";
export { Terminal } from "./terminal.js";
export type { ToolDefinition, ToolsOptions } from "./tools.js";
export { toolDefinitions } from "./tools.js";
export type * from "./types.js";
