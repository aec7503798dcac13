/**
 * The code-execution reward for RL: code taken from a model's message, run, and scored against an expected output or
 * test cases; knows nothing of datasets or results files.
 */
package dev.crucible.eval.reward;
