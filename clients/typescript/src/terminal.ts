import { CrucibleError } from "./errors.js";
import type { Transport } from "./http.js";

/** The parts of the WHATWG `WebSocket` a terminal uses (the browser's, Node's, or the `ws` package's). */
interface Socket {
  binaryType: string;
  readyState: number;
  send(data: string | ArrayBufferView | ArrayBuffer): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: string, listener: (event: { data?: unknown; code?: number; reason?: string }) => void): void;
}

type SocketClass = new (url: string, init?: unknown) => Socket;

/**
 * A terminal in a session's sandbox over `GET /v1/sessions/{id}/terminal`: raw bytes both ways (what xterm.js's
 * AttachAddon sends and takes). The token goes in the upgrade's Authorization header where the platform lets a
 * WebSocket carry headers (Node: its own `WebSocket`, or the `ws` package's, given as `ClientOptions.WebSocket`); a
 * browser's cannot, so a browser reaches only a token-less server this way.
 */
export class Terminal {
  private readonly listeners: ((data: Uint8Array) => void)[] = [];
  private readonly buffered: Uint8Array[] = [];
  /** Settles when the socket closes: the close's code and reason (the shell's `exit N`, say). */
  readonly closed: Promise<{ code: number; reason: string }>;

  private constructor(private readonly socket: Socket) {
    this.closed = new Promise((resolve) =>
      socket.addEventListener("close", (e) =>
        resolve({
          code: e.code ?? 1005,
          reason: e.reason ?? "",
        }),
      ),
    );
    socket.addEventListener("message", (e) => {
      const bytes =
        typeof e.data === "string" ? new TextEncoder().encode(e.data) : new Uint8Array(e.data as ArrayBuffer);
      if (this.listeners.length === 0) {
        this.buffered.push(bytes);
      }
      for (const l of this.listeners) l(bytes);
    });
  }

  static open(http: Transport, path: string): Promise<Terminal> {
    const Impl = http.WebSocket as SocketClass | undefined;
    if (!Impl) {
      return Promise.reject(
        new CrucibleError(
          0,
          "unreachable",
          "this platform has no WebSocket: under Node 20 run" +
            " with --experimental-websocket, or pass the ws package's as ClientOptions.WebSocket",
        ),
      );
    }
    const init = http.token ? { headers: { Authorization: `Bearer ${http.token}` } } : undefined;
    const socket = new Impl(http.socketUrl(path), init);
    socket.binaryType = "arraybuffer";
    return new Promise((resolve, reject) => {
      let opened = false;
      socket.addEventListener("open", () => {
        opened = true;
        resolve(new Terminal(socket));
      });
      socket.addEventListener("close", (e) => {
        if (!opened) {
          reject(new CrucibleError(0, "unreachable", `the terminal did not open (${e.code ?? ""} ${e.reason ?? ""})`));
        }
      });
      socket.addEventListener("error", () => {
        if (!opened) {
          reject(new CrucibleError(0, "unreachable", `the terminal at ${path} did not open`));
        }
      });
    });
  }

  /** Receives the terminal's output as it comes (what came before the first listener is handed to it first). */
  onData(listener: (data: Uint8Array) => void): void {
    this.listeners.push(listener);
    this.buffered.splice(0).forEach(listener);
  }

  /** Types into the terminal. */
  write(data: string | Uint8Array): void {
    this.socket.send(typeof data === "string" ? new TextEncoder().encode(data) : data);
  }

  /** Closes the terminal: a login shell it started is hung up. */
  close(): void {
    this.socket.close(1000, "closed by the client");
  }
}
