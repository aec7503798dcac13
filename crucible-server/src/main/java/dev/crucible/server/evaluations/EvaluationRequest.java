package dev.crucible.server.evaluations;

import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.List;

/**
 * {@code POST /v1/evaluations}: a dataset as {@code crucible eval dataset} takes it, its files given as their text.
 *
 * @param format humaneval, mbpp or stdio
 * @param problems the problems file's JSONL
 * @param samples the samples file's JSONL; null: the dataset's reference solutions
 * @param k the pass@k values (default 1)
 * @param timeoutMs each program's limit (default 10000)
 * @param image the image every sample runs in (null: the host's runtimes)
 */
public record EvaluationRequest(
        @JsonProperty("format") String format,
        @JsonProperty("problems") String problems,
        @JsonProperty("samples") String samples,
        @JsonProperty("k") List<Integer> k,
        @JsonProperty("timeout_ms") Long timeoutMs,
        @JsonProperty("image") String image) {}
