/**
 * The stateless {@code /v1} routes (execute, streamed or not; evaluate; reward; runtimes; tools) as handlers the
 * server's route table registers; it never registers a route or writes an error itself.
 */
package dev.crucible.server.api;
