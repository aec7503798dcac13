/**
 * Where a connection would go, read strictly and never looked up: host and authority syntax, address ranges, the
 * target of a request, and the table of address classes a sandbox may not reach; depends on nothing of egress.
 */
package dev.crucible.egress.address;
