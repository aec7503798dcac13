import { CrucibleError } from "./errors.js";

/** How a client reaches its server. */
export interface ClientOptions {
  /** The server, e.g. `http://127.0.0.1:8080` (default: `CRUCIBLE_URL` under Node, else that address). */
  baseUrl?: string;
  /** A bearer token (default: `CRUCIBLE_TOKEN` under Node); a token-less loopback server needs none. */
  token?: string;
  /** The longest one call may take, in ms (default 120 000); a call's own `signal` may end it sooner. */
  timeoutMs?: number;
  /**
   * How many times a refusal that says when to ask again (`429` or `503` with `Retry-After`: the queue full, an image
   * being pulled) is asked again, waiting what the server said (default 3; 0 never).
   */
  maxRetries?: number;
  /** The longest single wait a `Retry-After` may ask for, in ms (default 30 000): longer, the error is thrown. */
  maxRetryWaitMs?: number;
  /** A `fetch` of your own (a proxy, a test); default the platform's. */
  fetch?: typeof fetch;
  /** A `WebSocket` constructor for terminals (Node 20 needs `--experimental-websocket`, or the `ws` package's). */
  WebSocket?: unknown;
}

/** Options every call takes. */
export interface CallOptions {
  /** Cancels the call (and any wait for a retry): it rejects with a `CrucibleError` of code `aborted`. */
  signal?: AbortSignal;
  /** This call's own timeout in ms. */
  timeoutMs?: number;
}

interface Env {
  process?: { env?: Record<string, string | undefined> };
}

/** The HTTP core every part of the SDK calls through: JSON in and out, typed errors, Retry-After, cancellation. */
export class Transport {
  readonly baseUrl: string;
  readonly token: string | undefined;
  readonly WebSocket: unknown;
  private readonly timeoutMs: number;
  private readonly maxRetries: number;
  private readonly maxRetryWaitMs: number;
  private readonly fetchImpl: typeof fetch;

  constructor(options: ClientOptions = {}) {
    const env = (globalThis as Env).process?.env ?? {};
    const base = options.baseUrl ?? env.CRUCIBLE_URL ?? "http://127.0.0.1:8080";
    let parsed: URL;
    try {
      parsed = new URL(base);
    } catch {
      throw new TypeError(`baseUrl must be an absolute http(s) URL such as http://127.0.0.1:8080, not '${base}'`);
    }
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
      throw new TypeError(`baseUrl must be http or https, not ${parsed.protocol}`);
    }
    this.baseUrl = base.replace(/\/+$/, "");
    const token = options.token ?? env.CRUCIBLE_TOKEN;
    this.token = token?.trim() ? token.trim() : undefined;
    this.timeoutMs = options.timeoutMs ?? 120_000;
    this.maxRetries = options.maxRetries ?? 3;
    this.maxRetryWaitMs = options.maxRetryWaitMs ?? 30_000;
    this.fetchImpl = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.WebSocket = options.WebSocket ?? (globalThis as { WebSocket?: unknown }).WebSocket;
  }

  /** A JSON call: `body` sent as JSON (none: no body); the answer's JSON. */
  async json<T>(method: string, path: string, body?: unknown, options: CallOptions = {}): Promise<T> {
    const text = await this.read(
      method,
      path,
      {
        body: body === undefined ? undefined : JSON.stringify(body),
        contentType: body === undefined ? undefined : "application/json",
        accept: "application/json",
      },
      options,
      (response) => response.text(),
    );
    try {
      return (text ? JSON.parse(text) : {}) as T;
    } catch {
      throw new CrucibleError(
        200,
        "bad_response",
        `${method} ${path} answered what is not JSON: ${text.slice(0, 200)}`,
      );
    }
  }

  /** Sends one request and reads its 2xx answer with {@code body}, within the call's timeout and signal. */
  async read<T>(
    method: string,
    path: string,
    request: Outgoing,
    options: CallOptions,
    body: (response: Response) => Promise<T>,
  ): Promise<T> {
    const open = await this.open(method, path, request, options);
    try {
      return await body(open.response);
    } catch (e) {
      throw open.signal.aborted && open.signal.reason instanceof CrucibleError ? open.signal.reason : e;
    } finally {
      open.close();
    }
  }

  /**
   * Sends one request and answers its response once its status is 2xx, its body unread and still under the call's
   * timeout and signal until {@code close}; a refusal is thrown as the server's `CrucibleError`, after the retries
   * `Retry-After` allows.
   */
  async open(
    method: string,
    path: string,
    request: Outgoing,
    options: CallOptions = {},
  ): Promise<{ response: Response; signal: AbortSignal; close: () => void }> {
    const timeout = options.timeoutMs ?? this.timeoutMs;
    const controller = new AbortController();
    const timer = setTimeout(
      () => controller.abort(new CrucibleError(0, "timeout", `${method} ${path}: no answer` + ` within ${timeout} ms`)),
      timeout,
    );
    const onAbort = () => controller.abort(new CrucibleError(0, "aborted", `${method} ${path}: aborted`));
    if (options.signal?.aborted) {
      onAbort();
    } else {
      options.signal?.addEventListener("abort", onAbort, { once: true });
    }
    const headers: Record<string, string> = { ...request.headers };
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    if (request.contentType) headers["Content-Type"] = request.contentType;
    else if (method !== "GET" && method !== "HEAD") headers["X-Crucible-Request"] = "1"; // not a browser's form post
    if (request.accept) headers.Accept = request.accept;
    const close = () => {
      clearTimeout(timer);
      options.signal?.removeEventListener("abort", onAbort);
    };
    try {
      for (let attempt = 0; ; attempt++) {
        let response: Response;
        try {
          response = await this.fetchImpl(this.baseUrl + path, {
            method,
            headers,
            body: request.body,
            signal: controller.signal,
          });
        } catch (e) {
          throw reason(controller.signal, e, `${method} ${path}: cannot reach ${this.baseUrl}`);
        }
        if (response.ok) {
          return { response, signal: controller.signal, close };
        }
        const error = await errorOf(response, method, path);
        const wait = error.retryAfterS === undefined ? undefined : error.retryAfterS * 1000;
        if (
          (response.status !== 429 && response.status !== 503) ||
          wait === undefined ||
          attempt >= this.maxRetries ||
          wait > this.maxRetryWaitMs
        ) {
          throw error;
        }
        // jitter: the callers of one burst do not all come back in the same instant
        await sleep(wait * (1 + Math.random() / 5), controller.signal);
      }
    } catch (e) {
      close();
      throw e;
    }
  }

  /** The WebSocket URL of `path`. */
  socketUrl(path: string): string {
    return this.baseUrl.replace(/^http/, "ws") + path;
  }
}

/** What a request sends. */
export interface Outgoing {
  body?: BodyInit;
  contentType?: string;
  accept?: string;
  headers?: Record<string, string>;
}

/** The server's JSON error as a `CrucibleError`. */
async function errorOf(response: Response, method: string, path: string): Promise<CrucibleError> {
  const retry = response.headers.get("Retry-After");
  const retryAfterS = retry !== null && /^\d+$/.test(retry.trim()) ? Number(retry.trim()) : undefined;
  const text = await response.text().catch(() => "");
  try {
    const body = JSON.parse(text) as { error?: { code?: string; message?: string } };
    if (body.error?.code) {
      return new CrucibleError(response.status, body.error.code, body.error.message ?? body.error.code, retryAfterS);
    }
  } catch {
    // not the API's JSON: a proxy's page
  }
  return new CrucibleError(
    response.status,
    response.status === 404 ? "not_found" : "bad_response",
    `${method} ${path} answered HTTP ${response.status}: ${text.slice(0, 200)}`,
    retryAfterS,
  );
}

/** What ended a fetch: the abort's own reason (a timeout, a cancel), else the network. */
function reason(signal: AbortSignal, e: unknown, message: string): CrucibleError {
  if (signal.aborted && signal.reason instanceof CrucibleError) {
    return signal.reason;
  }
  const cause = e instanceof Error ? (e.cause instanceof Error ? e.cause.message : e.message) : String(e);
  return new CrucibleError(0, "unreachable", `${message} (${cause})`);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** Reads an NDJSON (or SSE `data:`) body as its events, one object per line; the body's reader is released at the end. */
export async function* events<T>(response: Response, signal?: AbortSignal): AsyncGenerator<T> {
  if (!response.body) {
    return;
  }
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let pending = "";
  try {
    while (true) {
      if (signal?.aborted) {
        throw new CrucibleError(0, "aborted", "the stream was aborted");
      }
      const { done, value } = await reader.read();
      pending += done ? decoder.decode() : decoder.decode(value, { stream: true });
      for (let newline = pending.indexOf("\n"); newline >= 0; newline = pending.indexOf("\n")) {
        const line = pending.slice(0, newline).trim();
        pending = pending.slice(newline + 1);
        const json = line.startsWith("data:") ? line.slice(5).trim() : line;
        if (json?.startsWith("{")) {
          yield JSON.parse(json) as T;
        }
      }
      if (done) {
        if (pending.trim().startsWith("{")) {
          yield JSON.parse(pending.trim()) as T;
        }
        return;
      }
    }
  } finally {
    reader.releaseLock();
  }
}
