package dev.crucible.session;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.crucible.Crucible;
import dev.crucible.TestHost;
import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.session.spec.CellResult;
import dev.crucible.session.spec.SessionConfig;
import dev.crucible.session.spec.SessionLimits;
import dev.crucible.session.workspace.WorkspaceDisk;
import dev.crucible.testhost.Capability;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 10, class 3: the workspace quota holds against writes from inside the sandbox (a kernel bound: each
 * workspace is a file system of its own), and the server admits sessions against total budgets of memory and disk.
 */
class SessionDiskHostileTest {
    static final String ME = "owner-a";
    static final long QUOTA = 64L << 20;

    static SessionManager start(SessionConfig config) throws Exception {
        Crucible c = TestHost.crucible();
        return SessionManager.start(c.sandbox(), c.runtimes(), config);
    }

    static SessionConfig config(Path data) {
        return SessionConfig.defaults(data).withCaps(1 << 20, 32L << 20, QUOTA);
    }

    static void assumeKernelBound(Path data) {
        WorkspaceDisk disk = WorkspaceDisk.detect(data, TestHost.crucible().sandbox().sessionUid(0) >= 0);
        Capability.WORKSPACE_DISK.require(disk.enforced() ? null : disk.describe());
    }

    static long bytesUnder(Path dir) throws Exception {
        try (Stream<Path> walk = Files.walk(dir)) {
            return walk.filter(Files::isRegularFile).mapToLong(p -> p.toFile().length()).sum();
        }
    }

    static boolean mountedUnder(Path dir) throws Exception {
        String prefix = dir.toRealPath().toString();
        return Files.readAllLines(Path.of("/proc/self/mountinfo")).stream()
                .anyMatch(line -> line.split(" ")[4].startsWith(prefix));
    }

    @Test
    void cellsCannotWritePastTheQuotaWhateverWayTheyWrite(@TempDir Path data) throws Exception {
        assumeKernelBound(data);
        try (SessionManager sessions = start(config(data))) {
            String id = sessions.create(ME, new SessionManager.CreateRequest("python", null, null, null)).id();
            CellResult r = sessions.execute(ME, id, """
                    import errno, os
                    written, seen = 0, set()
                    chunk = b'x' * (1 << 20)
                    for i in range(400):  # 400 MiB through many files, directories and ways of writing
                        path = '/workspace/d%d/f%d' % (i % 7, i)
                        os.makedirs(os.path.dirname(path), exist_ok=True)
                        try:
                            fd = os.open(path, os.O_WRONLY | os.O_CREAT)
                            try:
                                if i % 3 == 0:
                                    os.posix_fallocate(fd, 0, 8 << 20)
                                    written += 8 << 20
                                else:
                                    written += os.write(fd, chunk)
                            finally:
                                os.close(fd)
                        except OSError as e:
                            seen.add(errno.errorcode[e.errno])
                    print(sorted(seen), written >> 20)
                    """, null, 60_000L);
            assertThat(r.status().wireName()).as(r.toString()).isEqualTo("ok");
            assertThat(r.stdout()).as("the kernel said no").containsAnyOf("ENOSPC", "EDQUOT");
            Path workspace = data.resolve("sessions").resolve(id).resolve("workspace");
            assertThat(bytesUnder(workspace)).as("bytes the cell left on the host").isLessThanOrEqualTo(QUOTA);
            assertThat(Files.size(data.resolve("sessions").resolve(id).resolve(WorkspaceDisk.IMAGE)))
                    .isEqualTo(QUOTA);

            // full is not broken: delete and write again, through the file API too
            assertThat(sessions.execute(ME, id, "import shutil\nshutil.rmtree('/workspace/d0')\nopen('ok', 'w').write('y')",
                    null, null).status().wireName()).isEqualTo("ok");
            assertThatThrownBy(() -> sessions.files(ME, id).upload("too-big", new byte[30 << 20]))
                    .isInstanceOf(RequestException.class);
        }
    }

    /**
     * A workspace's image keeps every block it was given at creation, so a data directory that fills up later can never
     * fail the workspace's writes: the kernel's lazy inode-table init once punched holes in it through the loop device
     * within a second of the mount (16 MiB per GiB). Watched over the first seconds, while files are made.
     */
    @Test
    void aWorkspaceImageKeepsEveryBlockItWasGiven(@TempDir Path data) throws Exception {
        assumeKernelBound(data);
        long quota = 512L << 20; // several block groups, each with its inode table
        try (SessionManager sessions = start(SessionConfig.defaults(data).withCaps(1 << 20, 32L << 20, quota))) {
            String id = sessions.create(ME, new SessionManager.CreateRequest("python", null, null, null)).id();
            Path image = data.resolve("sessions").resolve(id).resolve(WorkspaceDisk.IMAGE);
            long given = allocatedBytes(image); // what it may write now (it grows in allocated steps, never shrinks)
            assertThat(sessions.execute(ME, id, "import os\nfor i in range(5000):\n    os.mkdir('d%d' % i)", null,
                    60_000L).status().wireName()).isEqualTo("ok");
            long until = System.nanoTime() + 4_000_000_000L;
            while (System.nanoTime() < until) { // an absence: looked for over a window, not waited for
                assertThat(allocatedBytes(image)).as("bytes the image holds on the host").isGreaterThanOrEqualTo(given);
                Thread.sleep(200);
            }
        }
    }

    /** What the file takes on its file system ({@code st_blocks}), from {@code stat}. */
    static long allocatedBytes(Path file) throws Exception {
        Process p = new ProcessBuilder("stat", "-c", "%b %B", file.toString()).redirectErrorStream(true).start();
        String[] out = new String(p.getInputStream().readAllBytes()).strip().split(" ");
        assertThat(p.waitFor()).isZero();
        return Long.parseLong(out[0]) * Long.parseLong(out[1]);
    }

    @Test
    void aBoundedWorkspaceKeepsItsFilesThroughARestartAndLeavesNothingWhenDeleted(@TempDir Path data) throws Exception {
        assumeKernelBound(data);
        String id;
        try (SessionManager sessions = start(config(data))) {
            id = sessions.create(ME, new SessionManager.CreateRequest("python", null, null, null)).id();
            sessions.execute(ME, id, "open('kept.txt', 'w').write('still here')", null, null);
        }
        assertThat(mountedUnder(data)).as("a stop unmounts the workspaces").isFalse();
        try (SessionManager again = start(config(data))) {
            CellResult r = again.execute(ME, id, "print(open('kept.txt').read())", null, null);
            assertThat(r.stdout()).as(r.toString()).isEqualTo("still here\n");
            assertThat(mountedUnder(data)).isTrue();
            again.delete(ME, id);
            assertThat(mountedUnder(data)).as("nothing mounted after delete").isFalse();
            assertThat(data.resolve("sessions").resolve(id)).doesNotExist();
        }
    }

    @Test
    void sessionsAreAdmittedAgainstTheMemoryBudget(@TempDir Path data) throws Exception {
        // each admitted for its whole limit (requests off); SessionOvercommitTest admits them by their requests
        try (SessionManager sessions = start(config(data).withBudgets(1024, 0).withMemoryRequest(0))) {
            SessionLimits half = SessionLimits.DEFAULT.with(512, null, null, null, null);
            String first = sessions.create(ME, new SessionManager.CreateRequest("python", half, null, null)).id();
            sessions.create(ME, new SessionManager.CreateRequest("python", half, null, null));
            SessionLimits small = SessionLimits.DEFAULT.with(64, null, null, null, null);
            assertThatThrownBy(() -> sessions.create(ME, new SessionManager.CreateRequest("python", small, null, null)))
                    .isInstanceOf(RequestException.class).hasMessageContaining("1024 MiB")
                    .extracting(e -> ((RequestException) e).code()).isEqualTo(ErrorCode.MEMORY_BUDGET_EXHAUSTED);
            sessions.delete(ME, first);
            assertThat(sessions.create(ME, new SessionManager.CreateRequest("python", small, null, null)).id())
                    .as("a delete gives its reservation back").isNotBlank();
        }
    }

    @Test
    void sessionsAreAdmittedAgainstTheDiskBudget(@TempDir Path data) throws Exception {
        try (SessionManager sessions = start(config(data).withBudgets(0, 2 * QUOTA + QUOTA / 2))) {
            String first = sessions.create(ME, new SessionManager.CreateRequest("python", null, null, null)).id();
            sessions.create(ME, new SessionManager.CreateRequest("python", null, null, null));
            assertThatThrownBy(() -> sessions.create(ME, new SessionManager.CreateRequest("python", null, null, null)))
                    .isInstanceOf(RequestException.class)
                    .extracting(e -> ((RequestException) e).code()).isEqualTo(ErrorCode.DISK_BUDGET_EXHAUSTED);
            sessions.delete(ME, first);
            assertThat(sessions.create(ME, new SessionManager.CreateRequest("python", null, null, null)).id()).isNotBlank();
        }
    }

    @Test
    void snapshotsCountAgainstTheDiskBudgetUntilTheyAreDeleted(@TempDir Path data) throws Exception {
        try (SessionManager sessions = start(config(data).withBudgets(0, QUOTA + (24L << 20)))) {
            String id = sessions.create(ME, new SessionManager.CreateRequest("python", null, null, null)).id();
            sessions.files(ME, id).upload("big.bin", new byte[16 << 20]);
            assertThat(sessions.pauses(ME, id).snapshot("one").bytes()).isGreaterThanOrEqualTo(16 << 20);
            assertThatThrownBy(() -> sessions.pauses(ME, id).snapshot("two"))
                    .as("16 MiB more would pass the budget").isInstanceOf(RequestException.class)
                    .extracting(e -> ((RequestException) e).code()).isEqualTo(ErrorCode.DISK_BUDGET_EXHAUSTED);
            assertThat(sessions.snapshots(ME)).as("a refused snapshot leaves nothing").hasSize(1);
            try (var left = Files.list(data.resolve("snapshots"))) {
                assertThat(left.toList()).hasSize(1);
            }
            sessions.delete(ME, id);
            String next = sessions.create(ME, new SessionManager.CreateRequest("python", null, null, null)).id();
            sessions.files(ME, next).upload("big.bin", new byte[16 << 20]);
            assertThatThrownBy(() -> sessions.pauses(ME, next).snapshot("two"))
                    .as("the snapshot holds its bytes after its session is gone")
                    .extracting(e -> ((RequestException) e).code()).isEqualTo(ErrorCode.DISK_BUDGET_EXHAUSTED);
            sessions.deleteSnapshot(ME, "one");
            assertThat(sessions.pauses(ME, next).snapshot("two").name()).as("a deleted snapshot gives its bytes back")
                    .isEqualTo("two");
        }
    }
}
