/**
 * The Codex Runner TOML workflow (generate completions, run tests, report, summary scoring); reads and writes its own
 * files only, never a dataset's results file.
 */
package dev.crucible.eval.codex;
