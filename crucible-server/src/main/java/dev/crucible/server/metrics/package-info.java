/**
 * The Prometheus metrics of {@code GET /metrics} (requests, verdicts, pool, queue, egress, parts); it only counts, and
 * never changes what it counts.
 */
package dev.crucible.server.metrics;
