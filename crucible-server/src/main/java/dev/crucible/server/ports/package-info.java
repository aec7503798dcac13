/**
 * A session's ports (issue 27 item 5): HTTP and WebSocket upgrades proxied to a server listening in the session's
 * sandbox, over connections the server makes in the sandbox's own network namespace ({@code SessionPorts}, which keeps
 * them alive between body-less requests); signed,
 * expiring preview links for browsers ({@link dev.crucible.server.ports.PreviewTokens}). Handlers, which the server's
 * route table registers, and the listener of previews' own ({@link dev.crucible.server.ports.PreviewListener}: one
 * origin per session and port, never an API route), which the server starts; never depends on
 * {@code dev.crucible.server}.
 */
package dev.crucible.server.ports;
