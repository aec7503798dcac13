/**
 * Crucible as an MCP server on the official SDK, over streamable HTTP at {@code /mcp} or stdio, on the tool
 * dispatcher; it adds no tool of its own.
 */
package dev.crucible.server.mcp;
