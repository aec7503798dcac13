package dev.crucible.session.workspace;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.os.Extents;
import dev.crucible.session.SessionManager;
import dev.crucible.session.spec.CellResult;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 50, the review's third finding: a growing workspace's image must hold every block but the balloon's. ext4
 * zeroes blocks (an unwritten extent split, lazy inode tables) with a write-zeroes request that a loop device turns into
 * a hole punched in its image; under a tenant's preallocated file, a later write there would need the host's disk
 * again, and fail once it is full after the write was acknowledged. The loop device is told to punch nothing.
 */
class ImageHolesTest {
    static final String ME = WorkspaceGrowthTest.ME;

    /** The byte ranges of {@code image} with no block, less those under {@code balloon} (which are given back). */
    static List<long[]> holesOutsideTheBalloon(Path image, Path balloon) throws Exception {
        List<long[]> holes = new ArrayList<>();
        long at = 0;
        for (Extents.Extent e : Extents.of(image, 0, Files.size(image))) {
            if (e.logical() > at) {
                holes.add(new long[] {at, e.logical()});
            }
            at = e.logical() + e.length();
        }
        if (at < Files.size(image)) {
            holes.add(new long[] {at, Files.size(image)});
        }
        List<Extents.Extent> given = Extents.of(balloon, 0, Files.size(balloon));
        List<long[]> outside = new ArrayList<>();
        for (long[] h : holes) {
            long from = h[0];
            boolean covered = true;
            while (from < h[1] && covered) {
                covered = false;
                for (Extents.Extent g : given) {
                    if (g.physical() <= from && from < g.physical() + g.length()) {
                        from = g.physical() + g.length();
                        covered = true;
                    }
                }
            }
            if (from < h[1]) {
                outside.add(new long[] {from, h[1]});
            }
        }
        return outside;
    }

    static String run(String... argv) throws Exception {
        Process p = new ProcessBuilder(argv).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        return p.waitFor() + " " + out.strip();
    }

    @Test
    void writesIntoAPreallocatedFileAndZeroesThroughTheLoopDeviceLeaveNoHoleUnderTheTenantsFiles(@TempDir Path data)
            throws Exception {
        WorkspaceGrowthTest.assumeKernelBound(data);
        try (SessionManager sessions = WorkspaceGrowthTest.start(data, 256L << 20)) {
            String id = sessions.create(ME, new SessionManager.CreateRequest("python", null, null, null)).id();
            Path dir = data.resolve("sessions").resolve(id);
            Path image = dir.resolve(WorkspaceDisk.IMAGE);
            Path balloon = dir.resolve(WorkspaceDisk.DISK).resolve(WorkspaceGrowth.BALLOON);
            assertThat(holesOutsideTheBalloon(image, balloon)).as("a new workspace").isEmpty();
            WorkspaceGrowth.roomFor(dir.resolve("workspace"), 32L << 20); // grown first: the files are 16 MiB
            assertThat(holesOutsideTheBalloon(image, balloon)).as("a grown workspace").isEmpty();

            // small writes from the end backwards into unwritten extents: each split leaves a short unwritten piece,
            // which ext4 may zero (extent_max_zeroout_kb) rather than keep; buffered, then O_DIRECT
            CellResult r = sessions.execute(ME, id, """
                    import hashlib, mmap, os
                    for name, flags in (('pre', 0), ('direct', os.O_DIRECT)):
                        fd = os.open('/workspace/' + name, os.O_CREAT | os.O_RDWR | flags, 0o644)
                        os.posix_fallocate(fd, 0, 8 << 20)
                        os.fsync(fd)
                        block = mmap.mmap(-1, 4096)
                        block.write(b'z' * 4096)
                        for at in reversed(range(0, 8 << 20, 16 << 10)):
                            os.pwrite(fd, block, at + 8192)
                        os.fsync(fd)
                        os.close(fd)
                    print(hashlib.sha256(open('/workspace/pre', 'rb').read()).hexdigest())
                    """, null, 120_000L);
            assertThat(r.status().wireName()).as(r.toString()).isEqualTo("ok");
            String sha = r.stdout().strip();
            assertThat(holesOutsideTheBalloon(image, balloon)).as("after writes into preallocated files").isEmpty();

            // the request ext4's zeroing sends (write-zeroes that may unmap), straight to the loop device, over the
            // tenant's file: refused by a device that punches nothing
            String device = DiskCalls.device(dir.resolve(WorkspaceDisk.DISK));
            Extents.Extent under = Extents.of(dir.resolve(WorkspaceDisk.DISK).resolve("w").resolve("pre"), 0, 1 << 20)
                    .get(0);
            String punched = run("fallocate", "--punch-hole", "--offset", Long.toString(under.physical()), "--length",
                    Long.toString(64 << 10), device);
            assertThat(holesOutsideTheBalloon(image, balloon)).as("after a zeroing through " + device + ": " + punched)
                    .isEmpty();
            assertThat(sessions.execute(ME, id, "import hashlib\nprint(hashlib.sha256(open('/workspace/pre', 'rb')"
                    + ".read()).hexdigest())", null, 60_000L).stdout().strip()).isEqualTo(sha);
            sessions.delete(ME, id);
        }
    }
}
