/**
 * {@code crucible bench}: a server over HTTP, its sessions, or a cold sandbox of this process, against bare interpreter
 * spawns in the same run; it prints figures and ratios, never asserts, and no other command uses it.
 */
package dev.crucible.cli.bench;
