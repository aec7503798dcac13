package dev.crucible.os;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.crucible.TestDirs;
import dev.crucible.testhost.Capability;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.List;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

/**
 * Loop mounts through the kernel's own calls (what a session's workspace is): a free device of its own, the file
 * system's bound kept, the device let go at the unmount, and nothing left configured when the mount fails. Real loop
 * devices: root only.
 */
class MountsTest {

    private static Path image(Path dir, String name) throws Exception {
        Path image = dir.resolve(name);
        try (var file = FileChannel.open(image, StandardOpenOption.CREATE_NEW,
                StandardOpenOption.WRITE)) {
            file.write(ByteBuffer.allocate(1), 16L * 1024 * 1024 - 1);
        }
        Process mkfs = new ProcessBuilder("/usr/sbin/mkfs.ext4", "-q", "-F", "-m", "0", image.toString())
                .redirectErrorStream(true).start();
        assertThat(mkfs.waitFor()).as(new String(mkfs.getInputStream().readAllBytes())).isZero();
        return image;
    }

    /** The loop devices backed by {@code image} now, as the kernel lists them under /sys/block/loop*. */
    private static List<String> devicesOf(Path image) throws Exception {
        try (var blocks = Files.list(Path.of("/sys/block"))) {
            return blocks.filter(b -> b.getFileName().toString().startsWith("loop")).filter(b -> {
                try {
                    Path backing = b.resolve("loop/backing_file");
                    return Files.exists(backing) && Files.readString(backing).strip().equals(image.toString());
                } catch (IOException e) {
                    return false; // let go meanwhile
                }
            }).map(b -> b.getFileName().toString()).toList();
        }
    }

    @Test
    void anImageIsMountedOnADeviceOfItsOwnHeldToItsSizeAndTheDeviceGoesWithTheUnmount() throws Exception {
        Capability.WORKSPACE_DISK.require(); // loop devices: root and /dev/loop-control
        Path dir = TestDirs.create("crucible-mounts-");
        Path a = image(dir, "a.img");
        Path b = image(dir, "b.img");
        Path ma = Files.createDirectory(dir.resolve("a"));
        Path mb = Files.createDirectory(dir.resolve("b"));
        Mounts.loop(a, ma, "ext4", Mounts.MS_NOSUID | Mounts.MS_NODEV | Mounts.MS_NOATIME, "noinit_itable");
        try {
            Mounts.loop(b, mb, "ext4", Mounts.MS_NOSUID | Mounts.MS_NODEV, null);
            try {
                assertThat(devicesOf(a)).hasSize(1);
                assertThat(devicesOf(b)).hasSize(1).doesNotContainAnyElementsOf(devicesOf(a));
                String options = Files.readAllLines(Path.of("/proc/self/mountinfo")).stream()
                        .filter(l -> l.split(" ")[4].equals(ma.toString())).findFirst().orElseThrow();
                assertThat(options).contains("nosuid").contains("nodev").contains("noatime").contains("ext4");
                Files.writeString(ma.resolve("kept"), "in a");
                assertThatThrownBy(() -> Files.write(ma.resolve("big"), new byte[32 * 1024 * 1024]))
                        .as("the file system's own size bounds it").hasMessageContaining("No space left");
                Path bound = Files.createDirectory(dir.resolve("bound"));
                Mounts.bind(ma, bound);
                assertThat(Files.readString(bound.resolve("kept"))).isEqualTo("in a");
                Mounts.unmount(bound, false);
            } finally {
                Mounts.unmount(mb, false);
            }
        } finally {
            Files.deleteIfExists(ma.resolve("big"));
            Mounts.unmount(ma, false);
        }
        Awaitility.await("let go at the unmount (autoclear)").atMost(Duration.ofSeconds(10))
                .pollInterval(Duration.ofMillis(20)).until(() -> devicesOf(a).isEmpty()
                        && devicesOf(b).isEmpty());
        Mounts.loop(a, ma, "ext4", 0, null); // the file system kept what was written
        try {
            assertThat(Files.readString(ma.resolve("kept"))).isEqualTo("in a");
        } finally {
            Mounts.unmount(ma, true);
        }
    }

    /**
     * An image whose file system is still held elsewhere (as a sandbox's namespace, not yet gone, holds a session's
     * workspace after the server unmounted it) is mounted again on the same device: the same file system, with what
     * was written through the holder; never a second device and file system over the same file.
     */
    @Test
    void anImageStillHeldElsewhereIsMountedAgainOnItsDevice() throws Exception {
        Capability.WORKSPACE_DISK.require(); // loop devices: root and /dev/loop-control
        Path dir = TestDirs.create("crucible-mounts-");
        Path a = image(dir, "a.img");
        Path first = Files.createDirectory(dir.resolve("first"));
        Path holder = Files.createDirectory(dir.resolve("holder"));
        Path again = Files.createDirectory(dir.resolve("again"));
        Mounts.loop(a, first, "ext4", 0, null);
        Mounts.bind(first, holder);
        Mounts.unmount(first, false);
        try {
            assertThat(devicesOf(a)).as("held by the bind").hasSize(1);
            String device = devicesOf(a).get(0);
            Files.writeString(holder.resolve("written-by-the-holder"), "still here");
            Mounts.loopAgain(a, again, "ext4", 0, null);
            try {
                assertThat(devicesOf(a)).as("no second device on the same file").containsExactly(device);
                assertThat(Files.readString(again.resolve("written-by-the-holder"))).isEqualTo("still here");
            } finally {
                Mounts.unmount(again, false);
            }
        } finally {
            Mounts.unmount(holder, false);
        }
        Awaitility.await("let go").atMost(Duration.ofSeconds(10))
                .pollInterval(Duration.ofMillis(20)).until(() -> devicesOf(a).isEmpty());
        Mounts.loopAgain(a, again, "ext4", 0, null); // on no device any more: a device of its own
        try {
            assertThat(devicesOf(a)).hasSize(1);
            assertThat(Files.readString(again.resolve("written-by-the-holder"))).isEqualTo("still here");
        } finally {
            Mounts.unmount(again, false);
        }
    }

    @Test
    void aMountThatFailsLeavesNoDeviceConfigured() throws Exception {
        Capability.WORKSPACE_DISK.require(); // loop devices: root and /dev/loop-control
        Path dir = TestDirs.create("crucible-mounts-");
        Path junk = dir.resolve("junk.img");
        Files.write(junk, new byte[4 * 1024 * 1024]); // no file system in it
        Path target = Files.createDirectory(dir.resolve("m"));
        assertThatThrownBy(() -> Mounts.loop(junk, target, "ext4", 0, null)).isInstanceOf(Linux.ErrnoException.class)
                .hasMessageContaining("mount");
        Awaitility.await("the device let go").atMost(Duration.ofSeconds(10))
                .pollInterval(Duration.ofMillis(20)).until(() -> devicesOf(junk).isEmpty());
        assertThatThrownBy(() -> Mounts.loop(dir.resolve("missing.img"), target, "ext4", 0, null))
                .isInstanceOf(Linux.ErrnoException.class);
    }
}
