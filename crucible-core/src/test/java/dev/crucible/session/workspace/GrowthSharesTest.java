package dev.crucible.session.workspace;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.crucible.session.SessionManager;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 50, the review's first finding: one tenant growing all its workspaces as far as they go cannot take the room
 * another tenant's workspace needs to grow to its share; the greedy tenant's own grows stop at its share instead.
 */
class GrowthSharesTest {
    static final long QUOTA = 256L << 20;

    @Test
    void aTenantGrowingEveryWorkspaceItHasLeavesAnotherTheRoomToGrowToItsShare(@TempDir Path dir) throws Exception {
        try (WorkspaceGrowthTest.SmallDisk disk = new WorkspaceGrowthTest.SmallDisk(dir, 1280)) {
            Path data = Files.createDirectory(disk.mount.resolve("data"));
            Files.setPosixFilePermissions(data, PosixFilePermissions.fromString("rwx--x--x"));
            WorkspaceGrowthTest.assumeKernelBound(data);
            try (SessionManager sessions = WorkspaceGrowthTest.start(data, QUOTA)) {
                List<String> greedy = new ArrayList<>();
                for (int i = 0; i < 4; i++) {
                    greedy.add(sessions.create("greedy", new SessionManager.CreateRequest("python", null, null, null))
                            .id());
                }
                String other = sessions.create("other", new SessionManager.CreateRequest("python", null, null, null))
                        .id();
                long greedyHeld = 0;
                for (String id : greedy) { // what the grower does for a tenant that fills (or fallocates) all it has
                    Path session = data.resolve("sessions").resolve(id);
                    WorkspaceGrowth.roomFor(session.resolve("workspace"), QUOTA);
                    greedyHeld += WorkspaceGrowthTest.allocatedBytes(session.resolve(WorkspaceDisk.IMAGE));
                }
                long free = new File(data.toString()).getUsableSpace();

                Path mount = data.resolve("sessions").resolve(other).resolve(WorkspaceDisk.DISK);
                int written = 0;
                int chunk = (int) (WorkspaceGrowth.LOW >> 20) - 2;
                for (int i = 0; written < 200; i++) { // a slower writer: each write once the grower kept its room
                    await("the other tenant's workspace grown").atMost(WorkspaceGrowthTest.GROWN).until(() ->
                            new File(mount.toString()).getUsableSpace() >= WorkspaceGrowth.LOW);
                    assertThat(WorkspaceGrowthTest.write(sessions, "other", other, "part" + i, chunk))
                            .as("written %d MiB (%d MiB free on the data disk after the greedy grows)", written,
                                    free >> 20).hasSize(64);
                    written += chunk;
                }
                assertThat(greedyHeld).as("the greedy tenant was held to its share: its four quotas would fit")
                        .isLessThan(4 * QUOTA - (64L << 20));
                for (String id : greedy) {
                    sessions.delete("greedy", id);
                }
                sessions.delete("other", other);
            }
        }
    }
}
