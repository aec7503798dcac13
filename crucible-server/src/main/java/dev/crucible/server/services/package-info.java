/**
 * The composition root above the engine ({@code Services}): sessions, judging, rewards, tool calls, admission and
 * metrics built once and handed to every front end (the HTTP server, MCP, the CLI); it knows no HTTP and no route.
 */
package dev.crucible.server.services;
