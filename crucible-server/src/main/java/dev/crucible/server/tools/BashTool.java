package dev.crucible.server.tools;

import dev.crucible.client.ToolOutcome;
import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.session.SessionManager;
import dev.crucible.session.SessionProcesses;
import dev.crucible.session.process.BackgroundProcess;
import dev.crucible.session.process.CommandRequest;
import dev.crucible.session.process.ProcessInfo;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * Anthropic's {@code bash} tool ({@code bash_20250124}: {@code command}, {@code restart};
 * https://platform.claude.com/docs/en/agents-and-tools/tool-use/bash-tool) on a session: one long-lived bash per
 * session, a background process of its sandbox, so that {@code cd} and variables carry from call to call as in
 * Anthropic's reference implementation (anthropic-quickstarts computer_use_demo/tools/bash.py). Each call is written
 * to the shell's stdin wrapped in a here-document (a command with a syntax error fails alone instead of leaving the
 * shell waiting for more), with stdin from /dev/null (a command cannot eat the next call), and ends at a random
 * sentinel the command's output cannot forge, which also carries its exit code. Past {@link #TIMEOUT_MS} the shell is
 * killed and, as in the reference, "must be restarted"; so must one that exited.
 */
final class BashTool {
    /** The reference implementation's time limit for one command. */
    static final long TIMEOUT_MS = 120_000;
    /** The output kept of one call, each stream; the rest is counted. */
    private static final int OUTPUT_CAP = 256 * 1024;
    private static final String LAUNCH = "if command -v bash >/dev/null 2>&1; then exec bash --noprofile --norc; fi;"
            + " exec sh";
    private static final SecureRandom RANDOM = new SecureRandom();

    private final SessionManager sessions;
    private final JsonMapper json;
    /** The shell of each session, by owner and session id. */
    private final Map<String, Shell> shells = new ConcurrentHashMap<>();

    BashTool(SessionManager sessions, JsonMapper json) {
        this.sessions = sessions;
        this.json = json;
    }

    /**
     * One session's shell: the process once started (held, not its pid: a pid means nothing in a sandbox that
     * replaced the shell's), and whether it must be restarted first.
     */
    private static final class Shell {
        final ReentrantLock lock = new ReentrantLock();
        BackgroundProcess process;
        String mustRestart;
    }

    /** The most shells kept before those of ended processes (or gone sessions) are let go. */
    private static final int MAX_SHELLS = 1024;

    /** {@code {command}} or {@code {restart: true}}. */
    ToolOutcome call(String owner, String sessionId, JsonNode args) throws InterruptedException {
        SessionProcesses processes = sessions.processes(owner, sessionId);
        if (shells.size() > MAX_SHELLS) { // sessions come and go: keep only the shells that still run
            shells.values().removeIf(s -> !s.lock.isLocked() && (s.process == null || !s.process.running()));
        }
        Shell shell = shells.computeIfAbsent(owner + "\0" + sessionId, k -> new Shell());
        if (!shell.lock.tryLock(TIMEOUT_MS + 10_000, TimeUnit.MILLISECONDS)) {
            return ToolOutcome.error("another bash call of this session is still running; try again when it ends.");
        }
        try {
            if (args.path("restart").asBoolean(false)) {
                kill(processes, shell);
                shell.mustRestart = null;
                return text("tool has been restarted.", false, null);
            }
            JsonNode command = args.get("command");
            if (command == null || !command.isString() || command.asString().isBlank()) {
                return ToolOutcome.error("no command provided.");
            }
            if (shell.mustRestart != null) {
                return ToolOutcome.error(shell.mustRestart + "; tool must be restarted (call bash with"
                        + " {\"restart\": true}).");
            }
            BackgroundProcess process = running(processes, shell);
            if (process == null) {
                return ToolOutcome.error(shell.mustRestart + "; tool must be restarted (call bash with"
                        + " {\"restart\": true}).");
            }
            return run(processes, shell, process, command.asString());
        } finally {
            shell.lock.unlock();
        }
    }

    /** The session's shell, started when there is none (or its sandbox was replaced); null when it exited. */
    private BackgroundProcess running(SessionProcesses processes, Shell shell) throws InterruptedException {
        if (shell.process != null) {
            ProcessInfo info = shell.process.info();
            if (info.running()) {
                return shell.process;
            }
            if (!info.lost()) {
                shell.mustRestart = "bash has exited with returncode " + (info.exitCode() != null
                        ? info.exitCode() : 128 + info.signal());
                shell.process = null;
                return null;
            }
        }
        // none yet, or its sandbox was replaced (a restart of the session): a fresh shell, as the reference's first call
        ProcessInfo started = processes.startQuiet(new CommandRequest(null, List.of("/bin/sh", "-c", LAUNCH),
                Map.of("PS1", "", "PS2", ""), null, null, null, null, true, true, null));
        shell.process = processes.get(started.pid());
        return shell.process;
    }

    private static void kill(SessionProcesses processes, Shell shell) throws InterruptedException {
        if (shell.process != null) {
            try {
                processes.signal(shell.process, "KILL", true);
            } catch (RequestException e) {
                // ended meanwhile: nothing to kill
            }
            shell.process = null;
        }
    }

    private ToolOutcome run(SessionProcesses processes, Shell shell, BackgroundProcess process, String command)
            throws InterruptedException {
        String sentinel = "__crucible_" + HexFormat.of().formatHex(randomBytes());
        String wrapped = "eval \"$(cat <<'" + sentinel + "'\n" + command + (command.endsWith("\n") ? "" : "\n")
                + sentinel + "\n)\" </dev/null\nprintf '\\n%s %d\\n' " + sentinel + " $?\nprintf '\\n%s\\n' "
                + sentinel + " >&2\n";
        long from = process.info().outputBytes();
        try {
            processes.write(process, wrapped.getBytes(StandardCharsets.UTF_8), false);
        } catch (RequestException e) {
            if (e.code() != ErrorCode.STDIN_CLOSED) {
                throw e;
            }
            shell.mustRestart = "bash has exited";
            shell.process = null;
            return ToolOutcome.error(shell.mustRestart + "; tool must be restarted (call bash with {\"restart\": true}).");
        }
        Collected out = new Collected("\n" + sentinel + " ");
        Collected err = new Collected("\n" + sentinel + "\n");
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(TIMEOUT_MS);
        long next = from;
        while (!(out.done() && err.done())) {
            long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
            if (left <= 0) {
                kill(processes, shell);
                shell.mustRestart = "timed out: bash has not returned in " + TIMEOUT_MS / 1000 + " seconds";
                return ToolOutcome.error(shell.mustRestart + " and must be restarted.");
            }
            processes.touch(); // a command that runs is use of its session, however long it takes
            BackgroundProcess.Output read = process.read(next, 1 << 20, Math.min(left, 1_000));
            out.missed += read.missed();
            for (BackgroundProcess.Chunk c : read.chunks()) {
                (c.stderr() ? err : out).take(c.bytes());
            }
            next = read.next();
            if (read.ended() && !(out.done() && err.done())) {
                ProcessInfo info = process.info();
                shell.mustRestart = "bash has exited with returncode " + (info.exitCode() != null ? info.exitCode()
                        : info.signal() != null ? 128 + info.signal() : -1);
                shell.process = null;
                String said = out.text() + err.text();
                return ToolOutcome.error((said.isBlank() ? "" : said.strip() + "\n") + shell.mustRestart
                        + "; tool must be restarted.");
            }
        }
        int exit = out.exitCode();
        String stdout = out.text();
        String stderr = err.text();
        ObjectNode result = json.createObjectNode().put("output", stdout).put("error", stderr).put("exit_code", exit);
        StringBuilder text = new StringBuilder(stdout);
        if (!stderr.isEmpty()) {
            text.append(text.isEmpty() || text.charAt(text.length() - 1) == '\n' ? "" : "\n").append(stderr);
        }
        return text(text.toString(), false, result);
    }

    private static byte[] randomBytes() {
        byte[] bytes = new byte[12];
        RANDOM.nextBytes(bytes);
        return bytes;
    }

    private static ToolOutcome text(String text, boolean error, JsonNode result) {
        return new ToolOutcome(List.of(ToolOutcome.Content.text(text)), error, result);
    }

    /**
     * One stream of a call up to its sentinel: the first {@link #OUTPUT_CAP} bytes kept, a tail kept to find the
     * sentinel however much came before it.
     */
    private static final class Collected {
        private final byte[] marker;
        private final ByteArrayOutputStream kept = new ByteArrayOutputStream();
        private final ByteArrayOutputStream tail = new ByteArrayOutputStream();
        private long cut;
        long missed;
        private String ended;

        Collected(String marker) {
            this.marker = marker.getBytes(StandardCharsets.UTF_8);
        }

        void take(byte[] bytes) {
            if (ended != null) { // the sentinel's own line may come in two reads: its exit code up to its newline
                if (!done()) {
                    ended += new String(bytes, StandardCharsets.ISO_8859_1);
                }
                return; // the rest is a straggler (a job the command left in the background): not this call's
            }
            tail.writeBytes(bytes);
            String seen = tail.toString(StandardCharsets.ISO_8859_1);
            String mark = new String(marker, StandardCharsets.ISO_8859_1); // the wrapper's newline, then the sentinel
            int at = seen.indexOf(mark);
            int keep;
            if (at >= 0) {
                keep = at;
                ended = seen.substring(at + mark.length());
            } else {
                keep = Math.max(0, seen.length() - marker.length);
            }
            byte[] done = seen.substring(0, keep).getBytes(StandardCharsets.ISO_8859_1);
            int room = (int) Math.max(0, OUTPUT_CAP - kept.size());
            kept.write(done, 0, Math.min(room, done.length));
            cut += Math.max(0, done.length - room);
            tail.reset();
            if (ended == null) {
                tail.writeBytes(seen.substring(keep).getBytes(StandardCharsets.ISO_8859_1));
            }
        }

        /** The sentinel and its line (the exit code after the stdout one) have come. */
        boolean done() {
            return ended != null && ended.indexOf('\n') >= 0 || ended != null && marker[marker.length - 1] == '\n';
        }

        /** The exit code the stdout sentinel carried. */
        int exitCode() {
            String rest = ended.strip();
            int space = rest.indexOf('\n');
            try {
                return Integer.parseInt((space < 0 ? rest : rest.substring(0, space)).strip());
            } catch (NumberFormatException e) {
                return -1;
            }
        }

        String text() {
            String text = kept.toString(StandardCharsets.UTF_8);
            if (text.endsWith("\n")) {
                text = text.substring(0, text.length() - 1); // the reference strips one trailing newline
            }
            if (cut > 0 || missed > 0) {
                text += "\n[" + (cut + missed) + " more bytes not shown]";
            }
            return text;
        }
    }
}
