package dev.crucible.os;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/**
 * What {@code /proc/<pid>/status} says of a process: its state, the signals pending for it and its pid in its own
 * pid namespace. A signal counts from the moment {@code kill(2)} returns, not from when the process gets the CPU to
 * act on it: a starved process (a warm agent at a low CPU weight on a busy host) may take long to do so. The file is
 * world-readable; no privilege is needed.
 *
 * @param state the state letter ({@code S}, {@code R}, {@code T}, {@code Z}…)
 * @param pendingSignals the signals pending for the thread or the whole process, as a mask (bit {@code n-1} for
 *     signal {@code n})
 * @param innermostPid its pid in the innermost pid namespace it is in (the last of {@code NSpid})
 * @param pidNamespaces how many pid namespaces it is in, counted from ours (1: ours only)
 * @param innermostSid its session's id in the innermost pid namespace (the last of {@code NSsid}), -1 when unknown
 */
public record ProcStatus(char state, long pendingSignals, long innermostPid, int pidNamespaces, long innermostSid) {
    private static final long SIGKILL_BIT = 1L << (9 - 1);
    private static final long SIGSTOP_BIT = 1L << (19 - 1);

    /** A process's standing, as far as running what it is handed is concerned. */
    public enum Standing {
        /** Sleeping or running, no fatal or stopping signal pending. */
        RUNS,
        /** Stopped ({@code T}, by a signal; {@code t}, by a tracer) or with a SIGSTOP pending: it runs nothing. */
        STOPPED,
        /** A zombie, or with a SIGKILL pending: it will never run anything again. */
        ENDING
    }

    /** The status of {@code pid}, or empty when it has gone (no {@code /proc} entry, or one that cannot be read). */
    public static Optional<ProcStatus> of(long pid) {
        try {
            return Optional.of(parse(Files.readString(Path.of("/proc", Long.toString(pid), "status"))));
        } catch (IOException | RuntimeException e) {
            return Optional.empty();
        }
    }

    /** The status a {@code /proc/<pid>/status} text describes. */
    static ProcStatus parse(String status) {
        char state = '?';
        long pending = 0;
        long innermost = -1;
        int namespaces = 0;
        long sid = -1;
        for (String line : status.split("\n")) {
            if (line.startsWith("State:")) {
                String value = line.substring(6).strip();
                state = value.isEmpty() ? '?' : value.charAt(0);
            } else if (line.startsWith("SigPnd:") || line.startsWith("ShdPnd:")) {
                pending |= Long.parseUnsignedLong(line.substring(7).strip(), 16);
            } else if (line.startsWith("NSpid:")) {
                String[] ids = line.substring(6).strip().split("\\s+");
                innermost = Long.parseLong(ids[ids.length - 1]);
                namespaces = ids.length;
            } else if (line.startsWith("NSsid:")) {
                String[] ids = line.substring(6).strip().split("\\s+");
                sid = Long.parseLong(ids[ids.length - 1]);
            }
        }
        return new ProcStatus(state, pending, innermost, namespaces, sid);
    }

    /**
     * Whether it is a program inside a sandbox's pid namespace: in a namespace below ours, and not its init (pid 1).
     * bubblewrap's monitor lives in our namespace and its init is pid 1 inside.
     */
    public boolean insideSandbox() {
        return pidNamespaces >= 2 && innermostPid >= 2;
    }

    /** Whether it runs, is stopped, or is on its way out. */
    public Standing standing() {
        if (state == 'Z' || state == 'X' || (pendingSignals & SIGKILL_BIT) != 0) {
            return Standing.ENDING;
        }
        if (state == 'T' || state == 't' || (pendingSignals & SIGSTOP_BIT) != 0) {
            return Standing.STOPPED;
        }
        return Standing.RUNS;
    }
}
