/**
 * A session's ports (issue 27 item 5): HTTP and WebSocket upgrades proxied to a server listening in the session's
 * sandbox, over connections the server makes in the sandbox's own network namespace ({@code SessionPorts}); signed,
 * expiring preview links for browsers ({@link dev.crucible.server.ports.PreviewTokens}). Handlers only: the server's
 * route table registers them; never depends on {@code dev.crucible.server}.
 */
package dev.crucible.server.ports;
