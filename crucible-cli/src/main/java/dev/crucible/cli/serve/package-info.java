/**
 * The long-running front ends: {@code crucible serve} (the HTTP service until SIGTERM) and {@code crucible mcp}
 * (MCP over stdio, which owns stdout); they only read options and hand them to the server module.
 */
package dev.crucible.cli.serve;
