package dev.crucible.session;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.sandbox.OutputListener;
import dev.crucible.sandbox.Sandbox;
import dev.crucible.session.interpreter.Interpreter;
import dev.crucible.session.process.Command;
import dev.crucible.session.process.CommandException;
import dev.crucible.session.process.CommandRequest;
import dev.crucible.session.process.CommandResult;
import dev.crucible.session.process.ProcessInfo;
import dev.crucible.session.process.Supervisor;
import dev.crucible.session.process.Terminal;
import dev.crucible.session.spec.SessionConfig;
import dev.crucible.session.spec.SessionLimits;
import dev.crucible.session.workspace.FileRoot;
import dev.crucible.session.workspace.SessionFiles;
import dev.crucible.session.workspace.Workspace;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Commands in a session's sandbox (issue 27): checks a {@link CommandRequest}, starts the session's sandbox when it
 * has none (as a cell would: resumed, replayed), and runs the command through the sandbox's supervisor beside the
 * interpreter, without the session's lock: a command runs while a cell does, and several at once.
 */
final class SessionCommands {
    private static final String DEFAULT_CWD = "/workspace";
    /** The longest time limit of a background command: a day (none at all when absent). */
    static final long MAX_BACKGROUND_TIMEOUT_MS = 86_400_000L;

    private final SessionRunner runner;
    private final SessionConfig config;

    SessionCommands(SessionRunner runner, SessionConfig config) {
        this.runner = runner;
        this.config = config;
    }

    /**
     * Runs one command to its end (or its time limit).
     *
     * @throws RequestException {@code invalid_request} for a request that cannot be run as sent,
     *     {@code too_many_processes}, {@code payload_too_large}, {@code session_busy} (the session is being started by a
     *     call that did not end in time), {@code interpreter_unavailable} (its sandbox could not start or ended),
     *     {@code commands_unavailable} (no supervisor here)
     */
    CommandResult run(Session session, CommandRequest request, OutputListener listener) throws InterruptedException {
        if (Boolean.TRUE.equals(request.background())) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "a background command answers with its process,"
                    + " not a result: start it with background true on its own");
        }
        Command command = command(request);
        long timeout = request.timeoutMs() == null ? session.stored.limits().timeoutMs() : request.timeoutMs();
        if (timeout < 1 || timeout > SessionLimits.MAXIMUM.timeoutMs()) {
            throw new RequestException(ErrorCode.INVALID_LIMITS, "timeout_ms must be between 1 and "
                    + SessionLimits.MAXIMUM.timeoutMs());
        }
        Supervisor supervisor = supervisorOf(session, timeout);
        session.touch();
        runner.readyToWrite(session); // a workspace that grows: a step of room before the command writes (pip install…)
        try {
            return supervisor.run(command, timeout, session.stored.limits().outputBytes(), listener);
        } catch (CommandException e) {
            if (e.kind() == CommandException.Kind.NOT_STARTED) {
                return notStarted(command, e.getMessage());
            }
            throw refusal(session, supervisor, e);
        } finally {
            session.touch();
        }
    }

    /**
     * Starts a background command: it runs on after the call, its output kept for later readers.
     *
     * @param use whether it keeps the session from idling while it runs
     * @throws RequestException as {@link #run}; {@code invalid_request} for a program or directory that is not there
     */
    ProcessInfo start(Session session, CommandRequest request, boolean use) throws InterruptedException {
        Command command = command(request);
        long timeout = request.timeoutMs() == null ? 0 : request.timeoutMs();
        if (request.timeoutMs() != null && (timeout < 1 || timeout > MAX_BACKGROUND_TIMEOUT_MS)) {
            throw new RequestException(ErrorCode.INVALID_LIMITS, "timeout_ms of a background command must be between"
                    + " 1 and " + MAX_BACKGROUND_TIMEOUT_MS + " (or absent: it runs until it ends or is signalled)");
        }
        Supervisor supervisor = supervisorOf(session, session.stored.limits().timeoutMs());
        session.touch();
        try {
            runner.readyToWrite(session);
            return supervisor.start(command, Boolean.TRUE.equals(request.stdinOpen()), timeout, use).info();
        } catch (CommandException e) {
            if (e.kind() == CommandException.Kind.NOT_STARTED) {
                CommandResult failed = notStarted(command, e.getMessage());
                throw new RequestException(ErrorCode.INVALID_REQUEST, failed.stderr().strip());
            }
            throw refusal(session, supervisor, e);
        }
    }

    /** The answer to a command the supervisor refused, or to a sandbox that ended under it. */
    RequestException refusal(Session session, Supervisor supervisor, CommandException e) {
        return switch (e.kind()) {
            case TOO_MANY -> new RequestException(ErrorCode.TOO_MANY_PROCESSES, e.getMessage());
            case TOO_LARGE -> new RequestException(ErrorCode.PAYLOAD_TOO_LARGE, e.getMessage());
            case STDIN_CLOSED -> new RequestException(ErrorCode.STDIN_CLOSED, e.getMessage());
            case STDIN_FULL -> new RequestException(ErrorCode.TOO_MANY_REQUESTS, e.getMessage()
                    + "; write again once it has read some");
            case NOT_STARTED, BROKEN -> {
                runner.sandboxLost(session, supervisor, e.getMessage());
                yield new RequestException(ErrorCode.INTERPRETER_UNAVAILABLE, e.getMessage()
                        + "; the session's next call starts a fresh sandbox");
            }
        };
    }

    /** The checked command of a request; a request that cannot be run as sent is refused whole. */
    static Command command(CommandRequest r) {
        if (Boolean.TRUE.equals(r.stdinOpen()) && !Boolean.TRUE.equals(r.background())) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "stdin_open keeps a background command's stdin"
                    + " open; a foreground command reads only its stdin");
        }
        if ((r.command() == null) == (r.argv() == null)) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "give either command (a shell line) or argv (a list"
                    + " of strings), not both");
        }
        List<String> argv = r.command() != null ? List.of("/bin/sh", "-c", r.command()) : r.argv();
        if (argv.isEmpty() || argv.stream().anyMatch(a -> a == null || a.indexOf('\0') >= 0) || argv.getFirst().isEmpty()) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "argv must be a non-empty list of strings without"
                    + " NUL characters, its first a program's name or path");
        }
        Map<String, String> env = r.env() == null ? Map.of() : r.env();
        for (Map.Entry<String, String> e : env.entrySet()) {
            String name = e.getKey();
            if (name.isEmpty() || name.indexOf('=') >= 0 || name.indexOf('\0') >= 0 || e.getValue() == null
                    || e.getValue().indexOf('\0') >= 0) {
                throw new RequestException(ErrorCode.INVALID_REQUEST, "env must map names (not empty, without '=' or"
                        + " NUL) to strings without NUL; " + name + " does not");
            }
        }
        // root's own home by default: a root command started in the user's /workspace would read what the user
        // planted there (.local site-packages, .gitconfig, …) as root
        String cwd = r.cwd() != null ? r.cwd() : r.user() == CommandRequest.User.ROOT ? "/root" : DEFAULT_CWD;
        if (!cwd.startsWith("/") || cwd.indexOf('\0') >= 0) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "cwd must be an absolute path in the session, such"
                    + " as /workspace");
        }
        byte[] stdin = r.stdin() == null ? new byte[0] : r.stdin().getBytes(StandardCharsets.UTF_8);
        if (r.pty() != null && (!Boolean.TRUE.equals(r.background()) || !r.pty().valid())) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "pty runs a background command on a terminal of"
                    + " {\"rows\", \"cols\"} from 1 to " + Terminal.MAX + ", e.g. {\"rows\": 24, \"cols\": 80}");
        }
        return new Command(argv, env, cwd, stdin, r.pty(), r.user() == CommandRequest.User.ROOT);
    }

    /** The files of a session, with the caps and the quota of this manager. */
    SessionFiles files(Session session) {
        return new SessionFiles(session.workspace, config.maxFileBytes(), config.workspaceQuota(),
                root -> rootFiles(session, root));
    }

    /**
     * The session's whole file system as its user or its root reaches it: its running sandbox's root (started, as a
     * cell would start it, when it has none), with the host uid the kernel checks each call as.
     *
     * @throws RequestException {@code invalid_request} for root in a session without a root of its own, and as
     *     {@link #run} when its sandbox cannot be started
     */
    Workspace rootFiles(Session session, boolean root) throws InterruptedException {
        long uid = runner.fileUid(session, root);
        if (root && uid < 0) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "user root reaches files as root of a session with a"
                    + " root of its own; session " + session.stored.id() + " has none (an image session, or one on a"
                    + " server that cannot give one: see crucible runtimes), so its files are reached as its user");
        }
        supervisorOf(session, session.stored.limits().timeoutMs());
        session.touch();
        return new Workspace(new FileRoot.SandboxRoot(() -> {
            Sandbox.Interactive box = session.box;
            if (box == null || !box.alive()) {
                throw new IOException("the session's sandbox ended");
            }
            try {
                return box.openRoot();
            } catch (IOException e) {
                throw new RequestException(ErrorCode.INTERPRETER_UNAVAILABLE, "the files of session "
                        + session.stored.id() + " outside /workspace cannot be reached now: " + e.getMessage());
            }
        }), uid);
    }

    /** The supervisor of the session's live sandbox, started (as a cell would start it) when there is none. */
    Supervisor supervisorOf(Session session, long timeout) throws InterruptedException {
        Supervisor supervisor = session.supervisor;
        Interpreter live = session.interpreter;
        if (supervisor != null && live != null && live.alive()) {
            return supervisor;
        }
        if (!session.lock.tryLock(timeout + config.grace().toMillis() + 5_000, TimeUnit.MILLISECONDS)) {
            throw new RequestException(ErrorCode.SESSION_BUSY, "the session's sandbox is being started by another call");
        }
        try {
            if (session.gone()) {
                throw new RequestException(ErrorCode.SESSION_NOT_FOUND, "no session " + session.stored.id());
            }
            SessionRunner.Boot boot = runner.boot(session);
            if (boot.failure() != null) {
                throw new RequestException(ErrorCode.INTERPRETER_UNAVAILABLE, boot.failure());
            }
            supervisor = session.supervisor;
            if (supervisor == null) {
                throw new RequestException(ErrorCode.COMMANDS_UNAVAILABLE, session.box.commandsUnavailable());
            }
            return supervisor;
        } finally {
            session.lock.unlock();
        }
    }

    /** A program or directory that is not there ends as a shell says so: 127 (not found) or 126, the reason on stderr. */
    private static CommandResult notStarted(Command command, String why) {
        if (why.startsWith("cannot change to its directory")) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "cwd " + command.cwd() + ": "
                    + why.substring(why.indexOf(':') + 1).strip());
        }
        int code = why.contains("No such file or directory") ? 127 : 126;
        return new CommandResult(code, null, "", "crucible: " + command.argv().getFirst() + ": " + why + "\n", false,
                false, false, 0, 0);
    }
}
