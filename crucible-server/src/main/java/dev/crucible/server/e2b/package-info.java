/**
 * E2B's protocol (issue 28): its control plane, envd (files; the Connect services {@code filesystem.Filesystem} and
 * {@code process.Process}) and the code interpreter's {@code /execute}, over Crucible's sessions, so that E2B's own
 * SDKs, pointed at the server with {@code E2B_API_URL} and {@code E2B_SANDBOX_URL}, run unchanged. One servlet filter
 * ({@link dev.crucible.server.e2b.E2bApi}) the server installs on its listener; never depends on
 * {@code dev.crucible.server}.
 */
package dev.crucible.server.e2b;
