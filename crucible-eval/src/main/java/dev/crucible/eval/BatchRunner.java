package dev.crucible.eval;

import dev.crucible.exec.ExecuteResult;
import dev.crucible.runtime.LanguageRuntime;
import dev.crucible.sandbox.Limits;
import dev.crucible.sandbox.Sandbox;
import dev.crucible.sandbox.SandboxResult;
import dev.crucible.sandbox.SandboxSpec;
import dev.crucible.sandbox.Verdict;
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
 * Runs many Python programs in one sandbox ({@code --isolation batch}): the sandbox's agent ({@code agents/python-batch})
 * is the sandbox's init, not dumpable, and forks a child of its warm interpreter per program; between two programs it
 * resets the whole sandbox (every process killed at once, every writable mount put back as it was, every IPC object
 * removed) and checks the reset. The host boundary is the same as a run's (one bubblewrap sandbox, seccomp, cgroups,
 * its own uid); what programs of one batch share is the sandbox, one after another, and its memory limit. No program
 * can reach the agent, its descriptors or the answers of another (the header of this file's agent says why). A
 * program that is not answered (the agent stopped, or its answer did not add up) gets no result here; the caller runs
 * it alone.
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

    /**
     * Results in the programs' order; null for a program the batch did not answer (the agent stopped, or its answer
     * was malformed: the caller runs it alone).
     *
     * @param outputBytes the cap per stream of each program, as a run of its own gets it: a program that writes more
     *     is killed and gets {@code output_limit}, whatever the mode
     */
    List<ExecuteResult> run(List<String> programs, long timeoutMs, int outputBytes) throws InterruptedException {
        // what comes back of each stream (head and tail) is bounded so that every answer fits the sandbox's own cap
        int send = (int) Math.min(1 << 20, Limits.MAXIMUM.outputBytes() / (2L * programs.size() + 2)) - Output.TAIL;
        ByteArrayOutputStream input = new ByteArrayOutputStream();
        for (String code : programs) {
            byte[] source = code.getBytes(StandardCharsets.UTF_8);
            byte[] meta = Dataset.JSON.writeValueAsBytes(Map.of("code_bytes", source.length, "stdin_bytes", 0,
                    "timeout_ms", timeoutMs, "output_bytes", outputBytes, "send_bytes", send));
            input.writeBytes(ByteBuffer.allocate(4).putInt(meta.length).array());
            input.writeBytes(meta);
            input.writeBytes(source);
        }
        long wall = Math.min(Limits.MAXIMUM.timeoutMs(), programs.size() * (timeoutMs + 1_000) + 5_000);
        Limits limits = new Limits(wall, wall, python.limits().memoryMb(), Limits.MAXIMUM.outputBytes(),
                python.limits().pids());
        List<String> command = List.of(python.runCommand().getFirst(), "-c", AGENT);
        SandboxResult r = sandbox.run(new SandboxSpec(command, python.env(), Map.of(), null, false, python.binds(),
                python.root(), input.toByteArray(), limits, null, true));
        List<ExecuteResult> results = new ArrayList<>();
        ByteBuffer frames = ByteBuffer.wrap(r.stdout());
        while (results.size() < programs.size()) {
            ExecuteResult one = Output.next(frames);
            if (one == null) {
                break; // the agent stopped here (or broke the protocol): the rest run alone
            }
            results.add(one);
        }
        while (results.size() < programs.size()) {
            results.add(null);
        }
        return results;
    }

    /** One answer of the agent: a JSON header, then the head and tail of stdout and of stderr. */
    static final class Output {
        static final int TAIL = 4096;

        private Output() {}

        /** The next answer, or null when the frames end or do not add up. */
        static ExecuteResult next(ByteBuffer frames) {
            try {
                if (frames.remaining() < 4) {
                    return null;
                }
                int length = frames.getInt();
                if (length < 0 || length > frames.remaining()) {
                    return null;
                }
                byte[] meta = new byte[length];
                frames.get(meta);
                JsonNode a = Dataset.JSON.readTree(meta);
                String stdout = stream(frames, a, "stdout");
                String stderr = stream(frames, a, "stderr");
                if (stdout == null || stderr == null) {
                    return null;
                }
                return result(a, stdout, stderr);
            } catch (RuntimeException e) {
                return null;
            }
        }

        private static String stream(ByteBuffer frames, JsonNode a, String name) {
            long total = a.path(name + "_bytes").asLong(-1);
            int head = a.path(name + "_head").asInt(-1);
            int tail = a.path(name + "_tail").asInt(-1);
            if (total < 0 || head < 0 || tail < 0 || head + (long) tail > total || head + tail > frames.remaining()) {
                return null;
            }
            byte[] h = new byte[head];
            byte[] t = new byte[tail];
            frames.get(h);
            frames.get(t);
            String text = new String(h, StandardCharsets.UTF_8);
            long omitted = total - head - tail;
            return omitted == 0 ? text + new String(t, StandardCharsets.UTF_8)
                    : text + "\n[crucible: " + omitted + " bytes omitted]\n" + new String(t, StandardCharsets.UTF_8);
        }

        /** The verdict as a run of its own would get it. */
        private static ExecuteResult result(JsonNode a, String stdout, String stderr) {
            boolean timedOut = a.path("timed_out").asBoolean(false);
            Integer signal = a.hasNonNull("signal") ? a.get("signal").asInt() : null;
            int exit = a.path("exit_code").asInt(1);
            boolean outCut = a.path("stdout_overflow").asBoolean(false);
            boolean errCut = a.path("stderr_overflow").asBoolean(false);
            Verdict status = timedOut ? Verdict.TIMEOUT : outCut || errCut ? Verdict.OUTPUT_LIMIT
                    : signal != null && signal == 9 ? Verdict.MEMORY_LIMIT : exit == 0 ? Verdict.OK : Verdict.RUNTIME_ERROR;
            return new ExecuteResult(status, exit, signal, stdout, stderr, outCut, errCut, a.path("wall_ms").asLong(0),
                    -1, -1, null, null, null, null);
        }
    }
}
