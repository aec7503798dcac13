package dev.crucible.util;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.testhost.Capability;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The user cache gives back only what this user wrote and no one else could have changed. */
class UserCacheTest {
    @TempDir
    Path home;

    private UserCache cache() {
        return new UserCache(home.resolve("crucible"));
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void whatIsWrittenIsReadBackPrivately() throws Exception {
        cache().write("entry", bytes("value"));

        assertThat(cache().read("entry", 100)).hasValueSatisfying(b -> assertThat(b).isEqualTo(bytes("value")));
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(home.resolve("crucible"))))
                .isEqualTo("rwx------");
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(home.resolve("crucible/entry"))))
                .isEqualTo("rw-------");
        try (var left = Files.list(home.resolve("crucible"))) {
            assertThat(left.map(p -> p.getFileName().toString())).containsExactly("entry"); // no temporary file
        }
    }

    @Test
    void aFileOthersCouldHaveWrittenIsNotRead() throws Exception {
        cache().write("entry", bytes("value"));
        Files.setPosixFilePermissions(home.resolve("crucible/entry"), PosixFilePermissions.fromString("rw--w----"));
        assertThat(cache().read("entry", 100)).isEmpty();

        Files.setPosixFilePermissions(home.resolve("crucible/entry"), PosixFilePermissions.fromString("rw-------"));
        Files.setPosixFilePermissions(home.resolve("crucible"), PosixFilePermissions.fromString("rwx----wx"));
        assertThat(cache().read("entry", 100)).as("a directory others can write to").isEmpty();
    }

    @Test
    void aSymbolicLinkIsNotFollowed() throws Exception {
        cache().write("real", bytes("value"));
        Files.createSymbolicLink(home.resolve("crucible/entry"), home.resolve("crucible/real"));
        assertThat(cache().read("entry", 100)).isEmpty();

        Path elsewhere = Files.createDirectory(home.resolve("elsewhere"));
        Files.setPosixFilePermissions(elsewhere, PosixFilePermissions.fromString("rwx------"));
        Files.writeString(elsewhere.resolve("entry"), "planted");
        Files.setPosixFilePermissions(elsewhere.resolve("entry"), PosixFilePermissions.fromString("rw-------"));
        Path linked = home.resolve("linked");
        Files.createSymbolicLink(linked, elsewhere);
        assertThat(new UserCache(linked).read("entry", 100)).as("a cache directory that is a link").isEmpty();
    }

    @Test
    void aFileLargerThanAskedIsNotRead() {
        cache().write("entry", new byte[101]);
        assertThat(cache().read("entry", 100)).isEmpty();
        assertThat(cache().read("entry", 101)).isPresent();
    }

    @Test
    void anotherUsersCacheIsNeitherReadNorWritten() throws Exception {
        Capability.ROOT.require(); // to give the cache to another uid (as a sudo that kept HOME would find it)
        cache().write("entry", bytes("theirs"));
        Path dir = home.resolve("crucible");
        Files.setAttribute(dir.resolve("entry"), "unix:uid", 65534);
        assertThat(cache().read("entry", 100)).as("a file of another uid").isEmpty();

        Files.setAttribute(dir.resolve("entry"), "unix:uid", 0);
        Files.setAttribute(dir, "unix:uid", 65534);
        assertThat(cache().read("entry", 100)).as("in a directory of another uid").isEmpty();
        cache().write("new", bytes("ours"));
        assertThat(dir.resolve("new")).doesNotExist();
    }
}
