/**
 * Judging one program: test cases, the six output comparisons, the proof that test code ran to its end, and the
 * typed status of each case; never reads a dataset, a results file or a model's message (the sub-packages do).
 */
package dev.crucible.eval;
