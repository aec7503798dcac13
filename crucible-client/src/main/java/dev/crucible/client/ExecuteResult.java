package dev.crucible.client;

import tools.jackson.databind.JsonNode;

/**
 * The answer of {@code POST /v1/execute}. {@code status} is one of {@code ok}, {@code runtime_error}, {@code timeout},
 * {@code memory_limit}, {@code output_limit}, {@code compile_error}, {@code sandbox_error}; {@code network} the egress
 * granted and the connections judged (null without network), {@code isolation} the wall it ran behind.
 */
public record ExecuteResult(String status, Integer exitCode, Integer signal, String stdout, String stderr,
        boolean stdoutTruncated, boolean stderrTruncated, long wallMs, long cpuMs, long memoryBytes,
        ExecuteResult compile, String message, String imageDigest, JsonNode network,
        String isolation) {

    public boolean ok() {
        return "ok".equals(status);
    }
}
