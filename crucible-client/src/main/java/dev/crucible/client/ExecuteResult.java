package dev.crucible.client;

/**
 * The answer of {@code POST /v1/execute}. {@code status} is one of {@code ok}, {@code runtime_error}, {@code timeout},
 * {@code memory_limit}, {@code output_limit}, {@code compile_error}, {@code sandbox_error}.
 */
public record ExecuteResult(String status, Integer exitCode, Integer signal, String stdout, String stderr,
        boolean stdoutTruncated, boolean stderrTruncated, long wallMs, long cpuMs, long memoryBytes,
        ExecuteResult compile, String message, String imageDigest) {

    public boolean ok() {
        return "ok".equals(status);
    }
}
