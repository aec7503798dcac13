package dev.crucible.session.workspace;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.sandbox.launch.LaunchCommand;
import dev.crucible.testhost.Capability;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A session's disk moved to another uid block, on a disk laid out as {@link WorkspaceDisk#createRooted} lays it out:
 * each file keeps its id inside, a planted link is moved itself and its target never touched, set-user-id bits stay,
 * a move cut short and finished on a third block leaves nothing in either earlier one, and a disk in place is left
 * alone.
 */
class DiskOwnersTest {
    private static final int OLD_USER = 62_001;
    private static final int NEW_USER = 65_001;
    private static final int THIRD_USER = 69_001;

    private static long block(int user) {
        return LaunchCommand.ROOT_UID_BASE + (long) user * LaunchCommand.ROOT_BLOCK;
    }

    private static void own(Path p, long uid, long gid) throws Exception {
        Files.setAttribute(p, "unix:uid", (int) uid, LinkOption.NOFOLLOW_LINKS);
        Files.setAttribute(p, "unix:gid", (int) gid, LinkOption.NOFOLLOW_LINKS);
    }

    private static String owners(Path p) throws Exception {
        return Integer.toUnsignedLong((Integer) Files.getAttribute(p, "unix:uid", LinkOption.NOFOLLOW_LINKS)) + ":"
                + Integer.toUnsignedLong((Integer) Files.getAttribute(p, "unix:gid", LinkOption.NOFOLLOW_LINKS));
    }

    /** A disk as a session of {@code user} left it: the server's top and r, root's files, the user's, a link out. */
    private static Path disk(Path dir, int user, Path outside) throws Exception {
        long root = block(user);
        Path disk = Files.createDirectories(dir.resolve("disk"));
        Path etc = Files.createDirectories(disk.resolve("r/root/etc"));
        Files.createDirectories(disk.resolve("r/usr-upper/local/bin"));
        Files.createDirectories(disk.resolve("r/usr-work/work"));
        Files.createDirectories(disk.resolve("w/sub"));
        Files.writeString(etc.resolve("app.conf"), "x\n");
        Files.writeString(etc.resolve("five"), "5\n");
        Files.writeString(disk.resolve("w/sub/f"), "w\n");
        Path suid = Files.writeString(disk.resolve("r/usr-upper/local/bin/suid"), "#!/bin/sh\n");
        Files.createSymbolicLink(disk.resolve("r/root/etc/out"), outside);
        try (var walk = Files.walk(disk.resolve("r"))) {
            for (Path p : walk.toList()) {
                own(p, root, root);
            }
        }
        own(disk.resolve("r"), 0, 0);
        own(etc.resolve("five"), root + 5, root + 7);
        own(etc.resolve("out"), root + 65534 % LaunchCommand.ROOT_BLOCK, root);
        for (Path p : new Path[] {disk.resolve("w"), disk.resolve("w/sub"), disk.resolve("w/sub/f")}) {
            own(p, user, user);
        }
        Files.setAttribute(suid, "unix:mode", 04755);
        return disk;
    }

    @Test
    void eachFileKeepsItsIdInsideInTheNewBlockAndALinkIsMovedItselfNeverFollowed(@TempDir Path dir) throws Exception {
        Capability.ROOT.require(); // only root gives files to other uids
        Path outside = Files.writeString(dir.resolve("host-file"), "the host's\n");
        Path disk = disk(dir, OLD_USER, outside);
        long root = block(NEW_USER);

        assertThat(DiskOwners.moveIfElsewhere(disk, NEW_USER, root)).isTrue();

        assertThat(owners(disk.resolve("r/root/etc/app.conf"))).isEqualTo(root + ":" + root);
        assertThat(owners(disk.resolve("r/root/etc/five"))).isEqualTo((root + 5) + ":" + (root + 7));
        assertThat(owners(disk.resolve("r/root/etc/out"))).isEqualTo((root + 65534 % LaunchCommand.ROOT_BLOCK)
                + ":" + root);
        assertThat(owners(outside)).as("the link's target is not the session's").isEqualTo("0:0");
        assertThat(owners(disk.resolve("r/usr-work/work"))).isEqualTo(root + ":" + root);
        assertThat(owners(disk.resolve("w/sub/f"))).isEqualTo(NEW_USER + ":" + NEW_USER);
        assertThat(owners(disk.resolve("r"))).as("the server's own directory").isEqualTo("0:0");
        assertThat((Integer) Files.getAttribute(disk.resolve("r/usr-upper/local/bin/suid"), "unix:mode") & 07777)
                .as("set-user-id kept through the chown").isEqualTo(04755);
        assertThat(DiskOwners.moveIfElsewhere(disk, NEW_USER, root)).as("in place: nothing to do").isFalse();
    }

    @Test
    void aMoveCutShortIsFinishedOnAThirdBlockWithNothingLeftInEither(@TempDir Path dir) throws Exception {
        Capability.ROOT.require();
        Path disk = disk(dir, OLD_USER, dir.resolve("nowhere"));
        long second = block(NEW_USER);
        // cut short: files below moved to the second block, the tops (moved last) still in the first
        own(disk.resolve("r/root/etc/app.conf"), second, second);
        own(disk.resolve("w/sub/f"), NEW_USER, NEW_USER);
        long third = block(THIRD_USER);

        assertThat(DiskOwners.moveIfElsewhere(disk, THIRD_USER, third)).isTrue();

        try (var walk = Files.walk(disk)) {
            for (Path p : walk.toList()) {
                for (String id : owners(p).split(":")) {
                    long owner = Long.parseLong(id);
                    assertThat(owner == 0 || owner == THIRD_USER
                            || owner >= third && owner < third + LaunchCommand.ROOT_BLOCK)
                            .as(p + " owned " + owners(p)).isTrue();
                }
            }
        }
        assertThat(owners(disk.resolve("r/root/etc/app.conf"))).isEqualTo(third + ":" + third);
        assertThat(owners(disk.resolve("w/sub/f"))).isEqualTo(THIRD_USER + ":" + THIRD_USER);
    }
}
