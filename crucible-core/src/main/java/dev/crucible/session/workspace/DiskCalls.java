package dev.crucible.session.workspace;

import dev.crucible.os.Linux;
import dev.crucible.os.Mounts;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * What {@link WorkspaceDisk.Loop} asks of the host besides mounts: the mount table, a tool run to its end, an image's
 * blocks, and its loop device told to punch nothing.
 */
final class DiskCalls {
    private DiskCalls() {}

    /** Whether {@code dir} is a mount point now, from {@code /proc/self/mountinfo}. */
    static boolean mounted(Path dir) throws IOException {
        String target = dir.toAbsolutePath().normalize().toString();
        for (String line : Files.readAllLines(Path.of("/proc/self/mountinfo"))) {
            String[] fields = line.split(" ");
            if (fields.length > 4 && unescape(fields[4]).equals(target)) {
                return true;
            }
        }
        return false;
    }

    /** The device mounted at {@code dir} ({@code /dev/loop7}), from {@code /proc/self/mountinfo}; null if none. */
    static String device(Path dir) throws IOException {
        String target = dir.toAbsolutePath().normalize().toString();
        String found = null;
        for (String line : Files.readAllLines(Path.of("/proc/self/mountinfo"))) {
            String[] fields = line.split(" ");
            int dash = List.of(fields).indexOf("-");
            if (fields.length > 4 && dash > 0 && dash + 2 < fields.length && unescape(fields[4]).equals(target)) {
                found = unescape(fields[dash + 2]); // the last mount there is the one seen
            }
        }
        return found;
    }

    /**
     * Has the loop device holding the file system mounted at {@code dir} never give its image's blocks back to the
     * host on the file system's behalf: ext4 zeroes blocks with a write-zeroes request, which a loop device turns into
     * a hole punched in its image (a discard too), so the blocks under a tenant's own file could go, and a write
     * there then fail on a full data directory after it was acknowledged. With the device's discard limit at 0 the
     * loop driver refuses both, and the kernel writes the zeroes as data instead (in blocks the image holds).
     *
     * @throws IOException when that cannot be set or did not hold (then the image must stay allocated whole)
     */
    static void neverUnmap(Path dir) throws IOException {
        String device = device(dir);
        if (device == null || !device.startsWith("/dev/loop")) {
            throw new IOException("no loop device mounted at " + dir);
        }
        Path limit = Path.of("/sys/block", Path.of(device).getFileName().toString(), "queue", "discard_max_bytes");
        Files.writeString(limit, "0");
        String now = Files.readString(limit).strip();
        if (!now.equals("0")) {
            throw new IOException(limit + " is " + now + " after writing 0");
        }
    }

    private static String unescape(String field) {
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < field.length(); i++) {
            char c = field.charAt(i);
            if (c == '\\' && i + 3 < field.length()) {
                out.append((char) Integer.parseInt(field.substring(i + 1, i + 4), 8));
                i += 3;
            } else {
                out.append(c);
            }
        }
        return out.toString();
    }

    static void run(String... argv) throws IOException {
        List<String> command = new ArrayList<>(List.of(argv));
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        p.getOutputStream().close();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        try {
            if (!p.waitFor(30, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IOException(argv[0] + " did not finish in 30 s");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException(argv[0] + " interrupted");
        }
        if (p.exitValue() != 0) {
            throw new IOException(String.join(" ", command) + " failed (" + p.exitValue() + "): " + out);
        }
    }

    /**
     * Whether the loop device under {@code disk} now never punches its image ({@link DiskCalls#neverUnmap}); false,
     * with a warning, where it cannot be told so: then the image must stay (or be made again) allocated whole.
     */
    static boolean unmapsNever(Path disk) {
        try {
            DiskCalls.neverUnmap(disk);
            return true;
        } catch (IOException | RuntimeException e) {
            System.getLogger(WorkspaceDisk.class.getName()).log(System.Logger.Level.WARNING, "the workspace in "
                    + disk + " keeps its quota allocated whole (it cannot grow in steps): " + e.getMessage());
            return false;
        }
    }

    /**
     * Gives the image all its blocks now. A sparse image would take them only as the workspace is written, and a
     * data directory filled meanwhile (by other sessions, images, anything) would fail those writes under the
     * workspace's file system: acknowledged uploads lost, its journal aborted. Allocated, a workspace is full only
     * at its own quota, and a full data directory refuses a new session instead ({@code ENOSPC} here). Unwritten
     * blocks cost no I/O. Data already in the image is kept (only holes are given blocks).
     *
     * @return false on a file system without {@code fallocate} (nothing done)
     */
    static boolean allocate(Path image, long bytes) throws IOException {
        try {
            Linux.fallocate(image, 0, 0, bytes);
            return true;
        } catch (Linux.ErrnoException e) {
            if (e.errno() != Linux.EOPNOTSUPP) {
                throw e;
            }
            return false;
        }
    }


    static void removeTree(Path dir) {
        if (!Files.exists(dir, LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        try (var walk = Files.walk(dir)) {
            for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException e) {
            // a probe directory: the next start tries again
        }
    }

    /** Unmounts {@code dir} if something is mounted there (lazily, if busy); a failure is logged. */
    static void unmount(Path dir) {
        try {
            if (DiskCalls.mounted(dir)) {
                try {
                    Mounts.unmount(dir, false);
                } catch (IOException e) {
                    Mounts.unmount(dir, true); // still busy: detached now, freed when idle
                }
            }
        } catch (IOException e) {
            System.getLogger(WorkspaceDisk.class.getName()).log(System.Logger.Level.WARNING,
                    "cannot unmount " + dir + ": " + e.getMessage());
        }
    }
}
