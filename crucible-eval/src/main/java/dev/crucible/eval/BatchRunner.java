package dev.crucible.eval;

import dev.crucible.exec.ExecuteResult;
import dev.crucible.runtime.LanguageRuntime;
import dev.crucible.sandbox.Limits;
import dev.crucible.sandbox.Sandbox;
import dev.crucible.sandbox.SandboxResult;
import dev.crucible.sandbox.SandboxSpec;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import tools.jackson.databind.JsonNode;

/**
 * Runs many Python programs in one sandbox ({@code --isolation batch}): the sandbox's agent forks a child of its warm
 * interpreter per program, and between two programs kills every other process of the sandbox and empties /tmp and
 * /workspace. The host boundary is the same as a run's (one bubblewrap sandbox, seccomp, cgroups, its own uid); what
 * programs of one batch share is the sandbox itself, one after another. A program that is not answered (the sandbox
 * died) gets no result here; the caller runs it alone.
 */
final class BatchRunner {
    static final String AGENT = agent();

    private final Sandbox sandbox;
    private final LanguageRuntime python;

    BatchRunner(Sandbox sandbox, LanguageRuntime python) {
        this.sandbox = sandbox;
        this.python = python;
    }

    private static String agent() {
        try (InputStream in = BatchRunner.class.getResourceAsStream("/dev/crucible/runtime/agents/python-batch")) {
            return in == null ? null : new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            return null;
        }
    }

    static boolean available() {
        return AGENT != null;
    }

    /** How many programs of {@code timeoutMs} fit in one sandbox run's wall clock. */
    static int batchSize(long timeoutMs) {
        return (int) Math.max(1, Math.min(16, (Limits.MAXIMUM.timeoutMs() - 10_000) / (timeoutMs + 1_000)));
    }

    /** Results in the programs' order; null for a program the batch did not answer. */
    List<ExecuteResult> run(List<String> programs, long timeoutMs) throws InterruptedException {
        int perProgramCap = (int) Math.min(1 << 20, Limits.MAXIMUM.outputBytes() / (2L * programs.size() + 2));
        ByteArrayOutputStream input = new ByteArrayOutputStream();
        for (String code : programs) {
            byte[] body = Dataset.JSON.writeValueAsBytes(Map.of("code", code, "stdin", "", "timeout_ms", timeoutMs,
                    "output_bytes", perProgramCap));
            input.writeBytes(ByteBuffer.allocate(4).putInt(body.length).array());
            input.writeBytes(body);
        }
        long wall = Math.min(Limits.MAXIMUM.timeoutMs(), programs.size() * (timeoutMs + 1_000) + 5_000);
        Limits limits = new Limits(wall, wall, python.limits().memoryMb(), Limits.MAXIMUM.outputBytes(),
                python.limits().pids());
        List<String> command = List.of(python.runCommand().getFirst(), "-c", AGENT);
        SandboxResult r = sandbox.run(new SandboxSpec(command, python.env(), Map.of(), null, false, python.binds(),
                python.rootfs(), input.toByteArray(), limits));
        List<ExecuteResult> results = new ArrayList<>();
        ByteBuffer frames = ByteBuffer.wrap(r.stdout());
        while (frames.remaining() >= 4 && results.size() < programs.size()) {
            int length = frames.getInt();
            if (length < 0 || length > frames.remaining()) {
                break;
            }
            byte[] body = new byte[length];
            frames.get(body);
            results.add(result(Dataset.JSON.readTree(body)));
        }
        while (results.size() < programs.size()) {
            results.add(null);
        }
        return results;
    }

    /** The verdict as a run of its own would get it. */
    static ExecuteResult result(JsonNode a) {
        boolean timedOut = a.path("timed_out").asBoolean(false);
        Integer signal = a.hasNonNull("signal") ? a.get("signal").asInt() : null;
        int exit = a.path("exit_code").asInt(1);
        boolean cut = a.path("stdout_truncated").asBoolean(false) || a.path("stderr_truncated").asBoolean(false);
        String status = timedOut ? "timeout" : cut ? "output_limit"
                : signal != null && signal == 9 ? "memory_limit" : exit == 0 ? "ok" : "runtime_error";
        return new ExecuteResult(status, exit, signal, a.path("stdout").asString(""), a.path("stderr").asString(""),
                a.path("stdout_truncated").asBoolean(false), a.path("stderr_truncated").asBoolean(false),
                a.path("wall_ms").asLong(0), -1, -1, null, null);
    }
}
