/**
 * The {@code /v1/sessions} routes (sessions, cells, interrupts, restarts, network, files) as handlers the server's
 * route table registers behind the cluster's router; it never forwards a request itself.
 */
package dev.crucible.server.session;
