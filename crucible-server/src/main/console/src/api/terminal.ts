// A session's terminal WebSocket as a browser must open it. The SDK's `Session.terminal()` sends the token in an
// Authorization header, which a browser's WebSocket cannot carry: here it goes as a subprotocol,
// `crucible.bearer.<base64url>`, after `crucible.terminal` (the one the server answers with, so the token never comes
// back in a header), and never in the URL.
import { token } from "./client";

/** A WebSocket to `sessionId`'s terminal: a login shell of `rows` × `cols`. */
export function terminalSocket(sessionId: string, rows: number, cols: number): WebSocket {
  const protocols = ["crucible.terminal"];
  const bearer = token();
  if (bearer) protocols.push(`crucible.bearer.${base64url(bearer)}`);
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const socket = new WebSocket(
    `${scheme}://${location.host}/v1/sessions/${encodeURIComponent(sessionId)}/terminal` + `?rows=${rows}&cols=${cols}`,
    protocols,
  );
  socket.binaryType = "arraybuffer";
  return socket;
}

function base64url(text: string): string {
  return btoa(String.fromCharCode(...new TextEncoder().encode(text)))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");
}
