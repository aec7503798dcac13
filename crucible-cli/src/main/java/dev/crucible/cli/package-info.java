/**
 * The {@code crucible} command's root: picocli's entry point with one subcommand per family and where log records go;
 * nothing below depends on it.
 */
package dev.crucible.cli;
