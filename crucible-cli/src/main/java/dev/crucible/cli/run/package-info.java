/**
 * One program on this host's engine: {@code crucible run} and {@code crucible runtimes} (what can run here, and the
 * sandbox's isolation facts); nothing is kept after the command.
 */
package dev.crucible.cli.run;
