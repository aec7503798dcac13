// The console's one client: the TypeScript SDK's (clients/typescript, imported from source: one client, one set of
// types), made for this origin with the tab's token. The token lives in sessionStorage (this tab only, gone when it
// closes), never in a URL or localStorage.
import { Crucible, CrucibleError } from "@crucible/sdk";

const TOKEN_KEY = "crucible.token";
let client = make();

/** The client of the server that served this page, with the tab's token. */
export function crucible(): Crucible {
  return client;
}

/** The tab's token, if it has one. */
export function token(): string | undefined {
  return sessionStorage.getItem(TOKEN_KEY) ?? undefined;
}

/** Keeps `value` as the tab's token (empty: none) and makes the client again with it. */
export function useToken(value: string | undefined): void {
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  else sessionStorage.removeItem(TOKEN_KEY);
  client = make();
}

/** An error as one line: the API's code and message. */
export function describe(e: unknown): string {
  if (e instanceof CrucibleError) return `${e.code}: ${e.message}`;
  return e instanceof Error ? e.message : String(e);
}

/** A call may take as long as a person lets it: a cell or a run ends by its own limits, not the SDK's default 2 min. */
const CALL_TIMEOUT_MS = 30 * 60_000;

function make(): Crucible {
  return new Crucible({ baseUrl: location.origin, token: token(), timeoutMs: CALL_TIMEOUT_MS });
}
