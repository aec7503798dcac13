package dev.crucible.exec;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import dev.crucible.egress.EgressReport;
import dev.crucible.sandbox.Isolation;
import dev.crucible.sandbox.SandboxResult;
import dev.crucible.sandbox.Verdict;
import java.nio.charset.StandardCharsets;

/**
 * The answer of {@code POST /v1/execute} and of {@code crucible run --json}. Output is decoded as UTF-8 with
 * invalid bytes replaced by U+FFFD; {@code cpu_ms} and {@code memory_bytes} are -1 where the host has no cgroup.
 *
 * @param status the verdict: ok, runtime_error, timeout, memory_limit, output_limit, compile_error, sandbox_error
 * @param exitCode the program's exit code (128 + signal when a signal ended it), null when it never ran
 * @param signal the signal that ended the program, or null
 * @param compile the compile step's result for compiled languages, or null
 * @param message why the sandbox failed, for {@code sandbox_error} only
 * @param imageDigest the digest of the image the program ran in, or null when it ran on the host's /usr
 * @param network the egress the program was granted and every connection its proxy judged, or null without network
 * @param isolation the wall it ran behind ({@code namespaces}, {@code gvisor}), or null where not said (a compile step)
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record ExecuteResult(
        @JsonProperty("status") Verdict status,
        @JsonProperty("exit_code") Integer exitCode,
        @JsonProperty("signal") Integer signal,
        @JsonProperty("stdout") String stdout,
        @JsonProperty("stderr") String stderr,
        @JsonProperty("stdout_truncated") boolean stdoutTruncated,
        @JsonProperty("stderr_truncated") boolean stderrTruncated,
        @JsonProperty("wall_ms") long wallMs,
        @JsonProperty("cpu_ms") long cpuMs,
        @JsonProperty("memory_bytes") long memoryBytes,
        @JsonProperty("compile") ExecuteResult compile,
        @JsonProperty("message") String message,
        @JsonProperty("image_digest") String imageDigest,
        @JsonProperty("network") EgressReport network,
        @JsonProperty("isolation") String isolation) {

    /** The wire form of one sandboxed step. */
    static ExecuteResult of(SandboxResult r, ExecuteResult compile) {
        Verdict v = r.verdict();
        return new ExecuteResult(v, r.sandboxError() == null ? r.exitCode() : null, r.signal(),
                new String(r.stdout(), StandardCharsets.UTF_8), new String(r.stderr(), StandardCharsets.UTF_8),
                r.stdoutTruncated(), r.stderrTruncated(), r.wallMs(), r.cpuMs(), r.memoryBytes(), compile,
                r.sandboxError(), null, null, null);
    }

    /** The answer when compiling failed: the program never ran. */
    static ExecuteResult compileFailed(ExecuteResult compile) {
        Verdict status = compile.status() == Verdict.SANDBOX_ERROR ? Verdict.SANDBOX_ERROR : Verdict.COMPILE_ERROR;
        return new ExecuteResult(status, null, null, "", "", false, false, 0, 0, 0, compile, compile.message(), null, null,
                null);
    }

    /** This result as run in the image with {@code digest} (null: on the host). */
    public ExecuteResult withImageDigest(String digest) {
        return digest == null ? this : new ExecuteResult(status, exitCode, signal, stdout, stderr, stdoutTruncated,
                stderrTruncated, wallMs, cpuMs, memoryBytes, compile, message, digest, network, isolation);
    }

    /** This result with its egress report (null: no network). */
    public ExecuteResult withNetwork(EgressReport report) {
        return new ExecuteResult(status, exitCode, signal, stdout, stderr, stdoutTruncated, stderrTruncated, wallMs,
                cpuMs, memoryBytes, compile, message, imageDigest, report, isolation);
    }

    /** This result as run behind {@code tier}. */
    public ExecuteResult withIsolation(Isolation tier) {
        return new ExecuteResult(status, exitCode, signal, stdout, stderr, stdoutTruncated, stderrTruncated, wallMs,
                cpuMs, memoryBytes, compile, message, imageDigest, network, tier.wire());
    }

    /** Whether the verdict is {@code ok}. */
    public boolean ok() {
        return status == Verdict.OK;
    }
}
