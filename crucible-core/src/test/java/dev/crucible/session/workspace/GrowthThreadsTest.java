package dev.crucible.session.workspace;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.crucible.session.SessionManager;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 50, the review's second finding: a grow that waits (a heavy writer's journal commit) or fails (any Throwable,
 * an Error too) stalls or stops only its own workspace's growth; the others grow meanwhile, and it grows once it can.
 */
class GrowthThreadsTest {
    static final String ME = WorkspaceGrowthTest.ME;

    static Path sessionDir(Path data, String id) {
        return data.resolve("sessions").resolve(id);
    }

    static long allocated(Path data, String id) {
        return WorkspaceGrowth.allocation(sessionDir(data, id).resolve("workspace")).allocated();
    }

    @Test
    void aGrowThatFailsWithAnErrorOrWaitsStallsOnlyItsOwnWorkspace(@TempDir Path data) throws Exception {
        WorkspaceGrowthTest.assumeKernelBound(data);
        try (SessionManager sessions = WorkspaceGrowthTest.start(data, 256L << 20)) {
            String stuck = sessions.create(ME, new SessionManager.CreateRequest("python", null, null, null)).id();
            String other = sessions.create(ME, new SessionManager.CreateRequest("python", null, null, null)).id();
            Path dir = sessionDir(data, stuck);
            CountDownLatch release = new CountDownLatch(1);
            AtomicInteger asked = new AtomicInteger();
            AtomicReference<WorkspaceDisk.Growth> admission = new AtomicReference<>(new WorkspaceDisk.Growth() {
                @Override
                public boolean take(Path sessionDir, long bytes) {
                    if (asked.incrementAndGet() == 1) {
                        throw new StackOverflowError("an Error from a grow");
                    }
                    try {
                        release.await(); // a grow that waits, as on a heavy writer's journal commit
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    return true;
                }

                @Override
                public void done(Path sessionDir, long bytes) {}
            });
            WorkspaceGrowth.watch(dir.resolve("workspace"), new WorkspaceGrowth.Mounted(dir, dir.resolve(
                    WorkspaceDisk.IMAGE), dir.resolve(WorkspaceDisk.DISK), admission));
            long failures = WorkspaceGrowth.failures();
            long stuckAt = allocated(data, stuck);
            long otherAt = allocated(data, other);
            try {
                // short of room after it: a grow
                assertThat(WorkspaceGrowthTest.write(sessions, stuck, "first", 12)).hasSize(64);
                await("the Error counted").atMost(WorkspaceGrowthTest.GROWN).until(() -> WorkspaceGrowth.failures()
                        > failures);
                await("a grow asked again, and waiting").atMost(WorkspaceGrowthTest.GROWN)
                        .until(() -> asked.get() >= 2);

                assertThat(WorkspaceGrowthTest.write(sessions, other, "first", 12)).hasSize(64);
                await("the other workspace grown while one grow waits").atMost(WorkspaceGrowthTest.GROWN)
                        .until(() -> allocated(data, other) > otherAt);
                assertThat(allocated(data, stuck)).isEqualTo(stuckAt);
                assertThat(sessions.execute(ME, stuck, "print(1 + 1)", null, null).stdout()).as("the session usable, its"
                        + " cell not waiting for its grow")
                        .isEqualTo("2\n");
            } finally {
                release.countDown(); // whatever failed above: the waiting grow goes on
            }
            await("the stuck workspace grown once its grow goes on").atMost(WorkspaceGrowthTest.GROWN)
                    .until(() -> allocated(data, stuck) > stuckAt);
            sessions.delete(ME, stuck);
            sessions.delete(ME, other);
        }
    }
}
