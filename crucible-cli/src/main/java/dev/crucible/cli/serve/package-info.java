/**
 * The long-running front ends: {@code crucible serve} (the HTTP service until SIGTERM) and {@code crucible mcp} (MCP
 * over stdio, which owns stdout); they read options, start the engine and hand it to the server module, which serves.
 */
package dev.crucible.cli.serve;
