package dev.crucible.sandbox.uid;

import dev.crucible.os.Linux;
import dev.crucible.sandbox.SandboxUnavailableException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * A host-wide lease on every uid one launcher will use: the {@link UidLayout#claimed() claim} of a {@link UidLayout}
 * (its block of {@link UidLayout#SIZE} uids and their root blocks), held by an {@code flock} on
 * {@code <dir>/uids-<first>-<last>.lock} (the block's ends; the file holds the holder's pid) for as long as this
 * process keeps the lease. The kernel drops the lock when the process dies, {@code kill -9} included; such a file is
 * stale and swept by the next {@link #acquire}. A claim is taken under an {@code flock} of {@code <dir>/uids.lock}
 * (and a lock of this JVM) after checking it against every live claim: a claim that overlaps one, whatever the two
 * bases, moves past it; after {@link #BLOCKS} tries it is refused. Two Crucible processes on one host — a server and a
 * {@code crucible eval dataset}, or two test JVMs — therefore never run sandboxes as the same uid, and neither do two
 * launchers of one JVM ({@code flock} is per open file, so a second descriptor of this process sees the lock taken).
 *
 * <p>Thread-safe: immutable once acquired; {@link #close()} is idempotent.
 */
public final class UidLease implements AutoCloseable {
    /** How many bases are tried, the first one included, before giving up. */
    public static final int BLOCKS = 16;
    /** Where the lock files live: per boot, root only. */
    public static final Path DIRECTORY = Path.of("/run/crucible");
    /** The lock every claim is checked and taken under. */
    static final String REGISTRY = "uids.lock";
    private static final Pattern CLAIM = Pattern.compile("uids-(\\d+)-(\\d+)\\.lock");
    /** Launchers of this JVM take their claims one at a time (the registry's flock is per process descriptor). */
    private static final Object IN_JVM = new Object();

    private final long base;
    private final Path file;
    private final int fd;
    private final List<String> skipped;
    private boolean closed;

    private UidLease(long base, Path file, int fd, List<String> skipped) {
        this.base = base;
        this.file = file;
        this.fd = fd;
        this.skipped = skipped;
    }

    /** A live claim of another holder: its block and its pid (as read, maybe empty). */
    private record Held(UidLayout.Range block, String pid) {
        List<UidLayout.Range> claimed() {
            return new UidLayout(block.first(), 1).claimed();
        }

        @Override
        public String toString() {
            return block + " (held by " + (pid.isEmpty() ? "another process" : "pid " + pid) + ")";
        }
    }

    /**
     * Claims the layout at {@code first}, or, when it overlaps a live claim, just past that claim's block (up to
     * {@link #BLOCKS} tries).
     *
     * @throws SandboxUnavailableException when no try is free, naming the ranges tried and their holders
     */
    public static UidLease acquire(Path directory, long first) {
        try {
            Files.createDirectories(directory);
            Files.setPosixFilePermissions(directory, PosixFilePermissions.fromString("rwxr-xr-x"));
        } catch (IOException e) {
            throw new SandboxUnavailableException("cannot create " + directory + " for the host-wide uid lease: "
                    + e.getMessage(), e);
        }
        synchronized (IN_JVM) {
            int registry = -1;
            try {
                registry = open(directory.resolve(REGISTRY));
                Linux.lockExclusive(registry);
                return claim(directory, first, live(directory));
            } catch (IOException e) {
                throw new SandboxUnavailableException("cannot lease sandbox uids in " + directory + ": "
                        + e.getMessage(), e);
            } finally {
                if (registry >= 0) {
                    Linux.close(registry); // drops the registry's lock
                }
            }
        }
    }

    private static UidLease claim(Path directory, long first, List<Held> live) throws IOException {
        List<String> skipped = new ArrayList<>();
        long base = first;
        for (int i = 0; i < BLOCKS; i++) {
            UidLayout layout = new UidLayout(base, 1);
            Held clash = live.stream().filter(h -> overlap(h.claimed(), layout.claimed())).findFirst().orElse(null);
            if (clash == null) {
                UidLayout.Range block = layout.block();
                Path file = directory.resolve("uids-" + block.first() + "-" + block.last() + ".lock");
                int fd = open(file);
                if (!Linux.tryLockExclusive(fd)) { // cannot be: live claims were checked under the registry's lock
                    Linux.close(fd);
                    throw new IOException(file + " is locked by another process");
                }
                Files.writeString(file, ProcessHandle.current().pid() + "\n", StandardCharsets.US_ASCII);
                return new UidLease(base, file, fd, List.copyOf(skipped));
            }
            skipped.add(clash.toString());
            // past the clash's block when the blocks meet, else (a block meets root blocks) one block on
            base = clash.block().overlaps(layout.block()) ? clash.block().last() + 1 : base + UidLayout.SIZE;
            if (base + UidLayout.SIZE - 1 > UidLayout.LARGEST_UID) {
                break;
            }
        }
        throw new SandboxUnavailableException("sandbox uids " + new UidLayout(first, 1).block() + " and the "
                + (BLOCKS - 1) + " ranges above overlap ranges leased by other Crucible processes: "
                + String.join(", ", skipped) + "; stop one, or start this one with CRUCIBLE_SLOT_UID_BASE set to a"
                + " free range");
    }

    private static boolean overlap(List<UidLayout.Range> a, List<UidLayout.Range> b) {
        return a.stream().anyMatch(x -> b.stream().anyMatch(x::overlaps));
    }

    /** The live claims in {@code directory}; a claim whose holder is gone is removed (under the registry's lock). */
    private static List<Held> live(Path directory) throws IOException {
        List<Held> held = new ArrayList<>();
        List<Path> files;
        try (Stream<Path> list = Files.list(directory)) {
            files = list.toList();
        }
        for (Path file : files) {
            Matcher m = CLAIM.matcher(file.getFileName().toString());
            if (!m.matches()) {
                continue;
            }
            UidLayout.Range block = new UidLayout.Range(Long.parseLong(m.group(1)), Long.parseLong(m.group(2)));
            int fd;
            try {
                fd = Linux.openat2(-100, file.toString(), Linux.O_RDWR | Linux.O_CLOEXEC | Linux.O_NOFOLLOW, 0, 0);
            } catch (Linux.ErrnoException e) {
                if (e.errno() == Linux.ENOENT) {
                    continue; // its holder let it go meanwhile
                }
                throw e;
            }
            try {
                if (Linux.tryLockExclusive(fd)) {
                    Files.deleteIfExists(file); // its holder died
                } else {
                    held.add(new Held(block, pid(file)));
                }
            } finally {
                Linux.close(fd);
            }
        }
        return held;
    }

    private static String pid(Path file) {
        try {
            return Files.readString(file, StandardCharsets.US_ASCII).strip();
        } catch (IOException e) {
            return "";
        }
    }

    private static int open(Path file) throws IOException {
        return Linux.openat2(-100, file.toString(), Linux.O_RDWR | Linux.O_CREAT | Linux.O_CLOEXEC
                | Linux.O_NOFOLLOW, 0600, 0);
    }

    /** The first uid of the claimed block. */
    public long base() {
        return base;
    }

    /** The lock file this lease holds. */
    public Path file() {
        return file;
    }

    /** The live claims found overlapping before this one, with their holders (empty when the first was free). */
    public List<String> skipped() {
        return skipped;
    }

    /** Gives the uids back: the file goes, then its lock. */
    @Override
    public synchronized void close() {
        if (!closed) {
            closed = true;
            try {
                Files.deleteIfExists(file);
            } catch (IOException ignored) {
                // a stale file is swept by the next acquire
            }
            Linux.close(fd);
        }
    }
}
