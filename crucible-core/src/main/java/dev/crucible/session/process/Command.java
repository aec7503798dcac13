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
 */
public record Command(List<String> argv, Map<String, String> env, String cwd, byte[] stdin, Terminal pty) {
    public Command {
        argv = List.copyOf(argv);
        env = Map.copyOf(env);
        stdin = stdin == null ? new byte[0] : stdin.clone();
    }

    @Override
    public byte[] stdin() {
        return stdin.clone();
    }
}
