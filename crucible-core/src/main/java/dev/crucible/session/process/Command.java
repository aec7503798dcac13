package dev.crucible.session.process;

import java.util.List;
import java.util.Map;

/**
 * One command to run in a session: its argv (a shell line is {@code ["/bin/sh", "-c", line]}), its environment on top
 * of the session's, its directory and its whole stdin.
 *
 * @param argv the program and its arguments; the program is looked up on the command's PATH
 * @param env variables added to (or replacing) the session's own
 * @param cwd the directory it starts in (absolute, in the sandbox)
 * @param stdin what it reads on stdin before end of file; empty for none
 * @param pty the terminal it runs on, or null for pipes
 * @param root whether it runs as root of the session's own user namespace (a session with a root of its own), not as
 *     the session's user
 */
public record Command(List<String> argv, Map<String, String> env, String cwd, byte[] stdin, Terminal pty, boolean root) {
    public Command {
        argv = List.copyOf(argv);
        env = Map.copyOf(env);
        stdin = stdin == null ? new byte[0] : stdin.clone();
    }

    /** A command of the session's user (uid 1000). */
    public Command(List<String> argv, Map<String, String> env, String cwd, byte[] stdin, Terminal pty) {
        this(argv, env, cwd, stdin, pty, false);
    }

    @Override
    public byte[] stdin() {
        return stdin.clone();
    }
}
