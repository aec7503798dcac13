/**
 * The evaluation workflows of {@code crucible eval} (dataset, merge, completions, tests, results, summary) and
 * {@code crucible reward}: they judge through crucible-eval, on the local engine or ({@code eval dataset --url}) a
 * server, and serve nothing themselves.
 */
package dev.crucible.cli.eval;
