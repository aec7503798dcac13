/**
 * The Java SDK of the HTTP API and the tool definitions a model is given (OpenAI, Anthropic, MCP), with {@code
 * fromResponse} for their replies; the JDK and Jackson only, nothing else of Crucible's.
 */
package dev.crucible.client;
