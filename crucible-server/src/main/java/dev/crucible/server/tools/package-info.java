/**
 * The tool calls of a model, for {@code /v1/tools/call} and MCP alike, with their outcomes worded for a model; a
 * model's mistake is an error outcome, never an exception, and it knows no transport.
 */
package dev.crucible.server.tools;
