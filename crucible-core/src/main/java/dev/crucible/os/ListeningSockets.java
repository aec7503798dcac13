package dev.crucible.os;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.List;
import java.util.TreeSet;

/**
 * The TCP ports something listens on in a process's network namespace, read from {@code /proc/PID/net/tcp} and
 * {@code tcp6} (the files show the namespace of the process named, whoever reads them). Pure parsing apart from the two
 * reads; a vanished process has none.
 */
public final class ListeningSockets {
    /** {@code TCP_LISTEN} in the {@code st} column. */
    private static final String LISTEN = "0A";

    private ListeningSockets() {}

    /** The listening ports of {@code pid}'s namespace, ascending, each once (IPv4 and IPv6 alike). */
    public static List<Integer> of(long pid) {
        TreeSet<Integer> ports = new TreeSet<>();
        for (String file : List.of("tcp", "tcp6")) {
            try {
                ports.addAll(parse(Files.readString(Path.of("/proc", Long.toString(pid), "net", file))));
            } catch (NoSuchFileException e) {
                // no such process (or no IPv6): nothing listens there
            } catch (IOException e) {
                // a process that ended mid-read: the same
            }
        }
        return List.copyOf(ports);
    }

    /**
     * The ports in LISTEN state in one {@code /proc/net/tcp}-style table: a header line, then
     * {@code sl local_address rem_address st …} with the address as {@code HEXADDR:HEXPORT}.
     */
    static TreeSet<Integer> parse(String table) {
        TreeSet<Integer> ports = new TreeSet<>();
        table.lines().skip(1).forEach(line -> {
            String[] f = line.strip().split("\\s+");
            if (f.length > 3 && f[3].equals(LISTEN)) {
                int colon = f[1].lastIndexOf(':');
                if (colon > 0) {
                    try {
                        ports.add(Integer.parseInt(f[1].substring(colon + 1), 16));
                    } catch (NumberFormatException e) {
                        // a line of another shape: not a socket we can name
                    }
                }
            }
        });
        return ports;
    }
}
