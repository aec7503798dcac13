/**
 * What every command shares: the engine's one start-up, a failure as one line and its exit code, the exit codes
 * themselves and the JSON mapper; it knows no command.
 */
package dev.crucible.cli.support;
