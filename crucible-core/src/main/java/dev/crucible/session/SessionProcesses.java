package dev.crucible.session;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.session.process.BackgroundProcess;
import dev.crucible.session.process.CommandException;
import dev.crucible.session.process.CommandRequest;
import dev.crucible.session.process.ProcessInfo;
import dev.crucible.session.process.Signals;
import dev.crucible.session.process.Supervisor;
import dev.crucible.session.process.Terminal;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;

/**
 * The background processes of one session (issue 27): started by {@code POST …/commands} with {@code background},
 * then listed, read, written to and signalled by pid. They live in the session's running sandbox: a dormant session
 * has none, and a restarted one starts with none.
 */
public final class SessionProcesses {
    private final Session session;
    private final SessionCommands commands;

    SessionProcesses(Session session, SessionCommands commands) {
        this.session = session;
        this.commands = commands;
    }

    /**
     * Starts a background command (the session's sandbox first, when it has none).
     *
     * @throws RequestException as {@code POST …/commands}
     */
    public ProcessInfo start(CommandRequest request) throws InterruptedException {
        return commands.start(session, request, true);
    }

    /**
     * Starts a background process that is not use of the session while it waits (a tool's long-lived shell: a
     * forgotten one must not keep its session from idling); its caller {@link #touch()}es the session while it works.
     */
    public ProcessInfo startQuiet(CommandRequest request) throws InterruptedException {
        return commands.start(session, request, false);
    }

    /** The session is in use now: its idle timeout counts from here. */
    public void touch() {
        session.touch();
    }

    /** Its background processes, running and ended, oldest first. */
    public List<ProcessInfo> list() {
        return session.processes();
    }

    /**
     * One background process.
     *
     * @throws RequestException {@code process_not_found}
     */
    public BackgroundProcess get(long pid) {
        return find(pid).process();
    }

    /** A process and the supervisor of its sandbox: a pid means nothing in another sandbox of the session. */
    private record Found(Supervisor supervisor, BackgroundProcess process) {}

    /** A process held since its start, with its sandbox's supervisor; null when that sandbox was replaced. */
    private Found held(BackgroundProcess process) {
        Supervisor supervisor = session.supervisor;
        return supervisor != null && supervisor.owns(process) ? new Found(supervisor, process) : null;
    }

    private Found find(long pid) {
        Supervisor supervisor = session.supervisor;
        BackgroundProcess process = (supervisor == null ? Optional.<BackgroundProcess>empty()
                : supervisor.process(pid)).orElseThrow(() -> new RequestException(ErrorCode.PROCESS_NOT_FOUND,
                        "session " + session.stored.id() + " has no background process " + pid + " (list them: GET"
                        + " /v1/sessions/" + session.stored.id() + "/processes)"));
        return new Found(supervisor, process);
    }

    /**
     * Sends a signal to a background process, or to its process group (what it started too).
     *
     * @param signal a name ({@code "TERM"}, {@code "SIGKILL"}) or a number
     * @return false when the process had already ended
     * @throws RequestException {@code process_not_found}, {@code invalid_request} for an unknown signal
     */
    public boolean signal(long pid, Object signal, boolean group) throws InterruptedException {
        int number;
        try {
            number = Signals.number(signal == null ? "TERM" : signal);
        } catch (IllegalArgumentException e) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, e.getMessage());
        }
        return signal(find(pid), number, group);
    }

    /**
     * As {@link #signal(long, Object, boolean)}, to a process held since its start (a tool's shell, a terminal): one
     * of a sandbox since replaced has ended, whatever now has its pid.
     */
    public boolean signal(BackgroundProcess process, Object signal, boolean group) throws InterruptedException {
        Found found = held(process);
        return found != null && signal(found, Signals.number(signal), group);
    }

    private boolean signal(Found found, int number, boolean group) throws InterruptedException {
        session.touch();
        return call(found, () -> found.supervisor().signal(found.process(), number, group));
    }

    /**
     * Writes text to a background process's stdin, then closes it when {@code close}.
     *
     * @return the bytes written
     * @throws RequestException {@code process_not_found}, {@code stdin_closed}, {@code too_many_requests} (it has
     *     not read what was written before), {@code payload_too_large}
     */
    public long write(long pid, String data, boolean close) throws InterruptedException {
        return write(pid, data == null ? new byte[0] : data.getBytes(StandardCharsets.UTF_8), close);
    }

    /** As {@link #write(long, String, boolean)}, bytes as they are (a terminal's keystrokes). */
    public long write(long pid, byte[] bytes, boolean close) throws InterruptedException {
        return write(find(pid), bytes, close);
    }

    /** As {@link #write(long, byte[], boolean)}, to a process held since its start. */
    public long write(BackgroundProcess process, byte[] bytes, boolean close) throws InterruptedException {
        Found found = held(process);
        if (found == null) {
            throw new RequestException(ErrorCode.STDIN_CLOSED, "the process ended with its sandbox");
        }
        return write(found, bytes, close);
    }

    private long write(Found found, byte[] bytes, boolean close) throws InterruptedException {
        session.touch();
        return call(found, () -> found.supervisor().write(found.process(), bytes, close));
    }

    /**
     * Sizes a background process's terminal (its foreground programs get SIGWINCH).
     *
     * @return false when the process had already ended
     * @throws RequestException {@code process_not_found}, {@code invalid_request} for a process on pipes or a size
     *     out of range
     */
    public boolean resize(long pid, Terminal size) throws InterruptedException {
        return resize(find(pid), size);
    }

    /** As {@link #resize(long, Terminal)}, for a process held since its start; false when it has ended. */
    public boolean resize(BackgroundProcess process, Terminal size) throws InterruptedException {
        Found found = held(process);
        return found != null && resize(found, size);
    }

    private boolean resize(Found found, Terminal size) throws InterruptedException {
        if (size == null || !size.valid()) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "a terminal's rows and cols are from 1 to "
                    + Terminal.MAX);
        }
        if (found.process().info().pty() == null) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "process " + found.process().pid() + " runs on"
                    + " pipes, not a terminal (start it with \"pty\": {\"rows\": 24, \"cols\": 80})");
        }
        session.touch();
        return call(found, () -> found.supervisor().resize(found.process(), size));
    }

    private <T> T call(Found found, SupervisorCall<T> call) throws InterruptedException {
        try {
            return call.run();
        } catch (CommandException e) {
            throw commands.refusal(session, found.supervisor(), e);
        }
    }

    @FunctionalInterface
    private interface SupervisorCall<T> {
        T run() throws InterruptedException;
    }
}
