package dev.crucible.session.workspace;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.crucible.Crucible;
import dev.crucible.TestHost;
import dev.crucible.session.SessionManager;
import dev.crucible.session.process.CommandRequest;
import dev.crucible.session.process.CommandResult;
import dev.crucible.session.spec.CellResult;
import dev.crucible.session.spec.SessionConfig;
import dev.crucible.testhost.Capability;
import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A workspace grows in whole allocated steps up to its quota (issue 50): a new one holds a small part of its quota on
 * the host, a session writing from inside gets more as it fills, never past the quota ({@code ENOSPC} there), and a
 * workspace the host's disk has no room to grow gets {@code ENOSPC} at its size with nothing it wrote lost.
 */
class WorkspaceGrowthTest {
    static final String ME = "owner-a";
    static final Duration GROWN = Duration.ofSeconds(60);

    static SessionManager start(Path data, long quota) throws Exception {
        Crucible c = TestHost.crucible();
        return SessionManager.start(c.sandbox(), c.runtimes(), SessionConfig.defaults(data).withCaps(1 << 20,
                32L << 20, quota));
    }

    static void assumeKernelBound(Path data) {
        WorkspaceDisk disk = WorkspaceDisk.detect(data, TestHost.crucible().sandbox().sessionUid(0) >= 0);
        Capability.WORKSPACE_DISK.require(disk.enforced() ? null : disk.describe());
    }

    /** What the file takes on its file system ({@code st_blocks}), from {@code stat}. */
    static long allocatedBytes(Path file) throws Exception {
        Process p = new ProcessBuilder("stat", "-c", "%b %B", file.toString()).redirectErrorStream(true).start();
        String[] out = new String(p.getInputStream().readAllBytes()).strip().split(" ");
        assertThat(p.waitFor()).isZero();
        return Long.parseLong(out[0]) * Long.parseLong(out[1]);
    }

    /** Writes {@code mib} MiB of seeded bytes to {@code name} from inside; prints its sha256, or the errno's name. */
    static String write(SessionManager sessions, String id, String name, int mib) throws Exception {
        return write(sessions, ME, id, name, mib);
    }

    /** As {@link #write(SessionManager, String, String, int)}, in a session of {@code owner}'s. */
    static String write(SessionManager sessions, String owner, String id, String name, int mib) throws Exception {
        CellResult r = sessions.execute(owner, id, """
                import errno, hashlib, os, random
                rng = random.Random('%s')
                h = hashlib.sha256()
                try:
                    with open('/workspace/%s', 'wb') as f:
                        for _ in range(%d):
                            chunk = rng.randbytes(1 << 20)
                            f.write(chunk)
                            h.update(chunk)
                        f.flush()
                        os.fsync(f.fileno())
                    print(h.hexdigest())
                except OSError as e:
                    print(errno.errorcode[e.errno])
                """.formatted(name, name, mib), null, 120_000L);
        assertThat(r.status().wireName()).as(r.toString()).isEqualTo("ok");
        return r.stdout().strip();
    }

    static String sha(SessionManager sessions, String id, String name) throws Exception {
        CellResult r = sessions.execute(ME, id, "import hashlib\nprint(hashlib.sha256(open('/workspace/" + name
                + "', 'rb').read()).hexdigest())", null, 60_000L);
        assertThat(r.status().wireName()).as(r.toString()).isEqualTo("ok");
        return r.stdout().strip();
    }

    @Test
    void aSessionWritingFromInsideGrowsItsImageInAllocatedStepsUpToItsQuotaAndGetsEnospcPastIt(@TempDir Path data)
            throws Exception {
        assumeKernelBound(data);
        long quota = 256L << 20;
        try (SessionManager sessions = start(data, quota)) {
            String id = sessions.create(ME, new SessionManager.CreateRequest("python", null, null, null)).id();
            Path dir = data.resolve("sessions").resolve(id);
            Path image = dir.resolve(WorkspaceDisk.IMAGE);
            long made = allocatedBytes(image);
            assertThat(Files.size(image)).as("the file system is made at the quota").isEqualTo(quota);
            assertThat(made).as("a new workspace holds a part of its quota on the host").isLessThan(quota / 2);

            String first = write(sessions, id, "first", 8);
            assertThat(first).hasSize(64);
            int written = 8;
            int chunk = (int) (WorkspaceGrowth.LOW >> 20) - 2;
            for (int i = 0; written <= 136; i++) { // each write waits for the room the grower keeps, as a slower writer
                await("the workspace grown").atMost(GROWN).until(() -> new File(dir.resolve(WorkspaceDisk.DISK)
                        .toString()).getUsableSpace() >= WorkspaceGrowth.LOW);
                assertThat(write(sessions, id, "more" + i, chunk)).hasSize(64);
                written += chunk;
            }
            assertThat(written << 20).isGreaterThan((int) (quota / 2));
            assertThat(allocatedBytes(image)).as("the image's allocated blocks grew with the workspace")
                    .isGreaterThanOrEqualTo(made + ((long) (written - 12) << 20));

            WorkspaceGrowth.roomFor(dir.resolve("workspace"), quota); // all the way: the quota is the bound
            assertThat(WorkspaceGrowth.held(dir.resolve(WorkspaceDisk.DISK))).isZero();
            String past = "";
            for (int i = 0; i < 5 && past.length() == 64 || i == 0; i++) { // files of 60 MiB (a sandbox's file size cap)
                past = write(sessions, id, "past" + i, 60);
            }
            assertThat(past).as("past the quota").isEqualTo("ENOSPC");
            assertThat(Files.size(image)).isEqualTo(quota);
            assertThat(sha(sessions, id, "first")).as("what was written before is intact").isEqualTo(first);
            sessions.delete(ME, id);
            assertThat(Files.exists(dir)).as("nothing left of it").isFalse();
        }
    }

    /**
     * A command that writes at once (a {@code pip install}, a download) gets a step of room before it runs, as a cell
     * does: more than a new workspace's free room, written faster than the grower's looks, fits.
     */
    @Test
    void aCommandThatWritesAtOnceGetsAStepOfRoomBeforeItRuns(@TempDir Path data) throws Exception {
        assumeKernelBound(data);
        try (SessionManager sessions = start(data, 256L << 20)) {
            String id = sessions.create(ME, new SessionManager.CreateRequest("python", null, null, null)).id();
            int mib = (int) (WorkspaceGrowth.INITIAL >> 20) * 3;
            CommandResult r = sessions.command(ME, id, CommandRequest.shell("head -c " + mib
                    + "M /dev/zero > /workspace/big && sync && stat -c %s /workspace/big"));
            assertThat(r.exitCode()).as(r.toString()).isZero();
            assertThat(r.stdout().strip()).isEqualTo(Long.toString((long) mib << 20));
        }
    }

    @Test
    void aWorkspaceTheHostHasNoRoomToGrowGetsEnospcAtItsSizeAndLosesNothing(@TempDir Path dir) throws Exception {
        Capability.WORKSPACE_DISK.require(null);
        try (SmallDisk disk = new SmallDisk(dir, 640)) {
            Path data = Files.createDirectory(disk.mount.resolve("data"));
            Files.setPosixFilePermissions(data, PosixFilePermissions.fromString("rwx--x--x"));
            assumeKernelBound(data);
            try (SessionManager sessions = start(data, 256L << 20)) {
                String id = sessions.create(ME, new SessionManager.CreateRequest("python", null, null, null)).id();
                sessions.files(ME, id).upload("mark.txt", "written before the disk filled".getBytes(StandardCharsets.UTF_8));
                disk.fill();
                String first = write(sessions, id, "first", 8);
                assertThat(first).as("what fits its size now is written").hasSize(64);
                assertThat(write(sessions, id, "big", 60)).as("no room to grow: a clean refusal").isEqualTo("ENOSPC");
                assertThat(sha(sessions, id, "first")).isEqualTo(first);
                assertThat(new String(sessions.files(ME, id).download("mark.txt"), StandardCharsets.UTF_8))
                        .isEqualTo("written before the disk filled");
                assertThat(sessions.execute(ME, id, "print(1 + 1)", null, null).stdout()).isEqualTo("2\n");

                disk.free(); // room again: the grower resumes, and the same write fits once there is room for it
                Path mount = data.resolve("sessions").resolve(id).resolve(WorkspaceDisk.DISK);
                await("the workspace grown").atMost(GROWN).until(() -> new File(mount.toString()).getUsableSpace()
                        >= WorkspaceGrowth.LOW);
                WorkspaceGrowth.roomFor(data.resolve("sessions").resolve(id).resolve("workspace"), 70L << 20);
                assertThat(write(sessions, id, "big", 60)).hasSize(64);
                assertThat(sha(sessions, id, "first")).isEqualTo(first);
                sessions.delete(ME, id);
            }
        }
    }

    @Test
    void aKeptSessionIsMountedAgainAtTheSizeItGrewToAndGrowsOnAfterARestart(@TempDir Path data) throws Exception {
        assumeKernelBound(data);
        String id;
        String first;
        long grown;
        Path dir;
        try (SessionManager sessions = start(data, 256L << 20)) {
            id = sessions.create(ME, new SessionManager.CreateRequest("python", null, null, null)).id();
            dir = data.resolve("sessions").resolve(id);
            first = write(sessions, id, "first", 8);
            WorkspaceGrowth.roomFor(dir.resolve("workspace"), 100L << 20);
            assertThat(write(sessions, id, "second", 60)).hasSize(64);
            grown = WorkspaceGrowth.held(dir.resolve(WorkspaceDisk.DISK));
            assertThat(grown).as("room left to grow").isPositive();
        }
        try (SessionManager again = start(data, 256L << 20)) { // looked at before any cell (a cell grows it first)
            assertThat(WorkspaceGrowth.held(dir.resolve(WorkspaceDisk.DISK))).as("the size it grew to").isEqualTo(grown);
            assertThat(sha(again, id, "first")).isEqualTo(first);
            assertThat(write(again, id, "third", 50)).as("the room it grew to").hasSize(64); // now low: it grows on
            await("the workspace grown after the restart").atMost(GROWN).until(() -> WorkspaceGrowth.held(
                    dir.resolve(WorkspaceDisk.DISK)) < grown);
            again.delete(ME, id);
            assertThat(Files.exists(dir)).isFalse();
        }
    }

    @Test
    void aForkOfAWorkspaceLargerThanANewOneHasItAllItsFirstGrowDoneByTheCopy(@TempDir Path data) throws Exception {
        assumeKernelBound(data);
        try (SessionManager sessions = start(data, 256L << 20)) {
            String id = sessions.create(ME, new SessionManager.CreateRequest("python", null, null, null)).id();
            WorkspaceGrowth.roomFor(data.resolve("sessions").resolve(id).resolve("workspace"), 150L << 20);
            String a = write(sessions, id, "a", 60);
            String b = write(sessions, id, "b", 60);
            String fork = sessions.pauses(ME, id).fork(1).forks().get(0).id();
            assertThat(sha(sessions, fork, "a")).isEqualTo(a);
            assertThat(sha(sessions, fork, "b")).isEqualTo(b);
        }
    }

    /** An ext4 file system of its own for the data directory, loop-mounted, that the test fills and frees. */
    static final class SmallDisk implements AutoCloseable {
        final Path mount;
        private final Path filler;

        SmallDisk(Path dir, int mebibytes) throws Exception {
            Path image = dir.resolve("disk.img");
            run("fallocate", "-l", mebibytes + "M", image.toString());
            run("mkfs.ext4", "-q", "-F", "-m", "0", image.toString());
            mount = Files.createDirectory(dir.resolve("mnt"));
            run("mount", "-o", "loop", image.toString(), mount.toString());
            Files.setPosixFilePermissions(mount, PosixFilePermissions.fromString("rwxr-xr-x"));
            Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
            filler = mount.resolve("filler");
        }

        void fill() throws IOException {
            byte[] chunk = new byte[1 << 20];
            try (OutputStream out = Files.newOutputStream(filler, StandardOpenOption.CREATE, StandardOpenOption.APPEND)) {
                for (int size = chunk.length; size >= 512; size /= 2) {
                    try {
                        while (true) {
                            out.write(chunk, 0, size);
                        }
                    } catch (IOException full) {
                        assertThat(full.getMessage()).contains("No space left on device");
                    }
                }
            }
            try (var channel = FileChannel.open(filler, StandardOpenOption.WRITE)) {
                channel.force(true);
            }
        }

        void free() throws IOException {
            Files.delete(filler);
        }

        @Override
        public void close() throws Exception {
            await("nothing holding " + mount).atMost(Duration.ofSeconds(30)).pollInSameThread()
                    .ignoreExceptions().until(() -> {
                        run("umount", mount.toString());
                        return true;
                    });
        }

        static void run(String... argv) throws Exception {
            Process p = new ProcessBuilder(argv).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
            assertThat(p.exitValue()).as(String.join(" ", argv) + ": " + out).isZero();
        }
    }
}
