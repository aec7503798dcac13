/**
 * Connections into sessions' sandboxes kept alive between a port proxy's exchanges ({@code KeptConnections}); knows
 * sandboxes only, nothing of a session's state or of HTTP.
 */
package dev.crucible.session.ports;
