/**
 * Benchmark datasets judged sample by sample, on this host's engine or a remote Crucible, into resumable results files
 * with pass@k, sharded and merged; judges through {@link dev.crucible.eval.Judge} and never scores a model's message.
 */
package dev.crucible.eval.dataset;
