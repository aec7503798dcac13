/**
 * Dataset evaluations run by the server (issue 32): {@code POST /v1/evaluations} takes a dataset's problems and
 * samples and runs {@code crucible eval dataset} on this server's engine in the background; its progress, summary
 * and results file (the same as {@code --out}'s) are kept under {@code <data dir>/evaluations/} for the token that
 * started it. Depends on the eval module's {@code DatasetRun}; knows nothing of HTTP routing or sessions.
 */
package dev.crucible.server.evaluations;
