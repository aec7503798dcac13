/**
 * Sessions across replicas: the peers found by name from their {@code /healthz}, and the router that forwards a
 * session request to its holder or adopts the session of a gone one; it never serves a session request itself.
 */
package dev.crucible.server.cluster;
