package dev.crucible.session.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A paused session's saved sandbox is the server's while paused, and handed to the session's uid only when it holds
 * nothing but regular files: a link or a directory planted in it (to have the server chown or restore something
 * else) is refused, and what it points at is left as it was.
 */
class SavedMemoryTest {
    private static final int UID = 64123;

    @TempDir
    Path dir;

    private Path saved() throws IOException {
        Path memory = Files.createDirectory(dir.resolve("memory"));
        Files.writeString(memory.resolve("checkpoint.img"), "state");
        Files.setAttribute(memory, "unix:uid", UID);
        Files.setAttribute(memory.resolve("checkpoint.img"), "unix:uid", UID);
        return memory;
    }

    @Test
    void whilePausedItIsTheServersAloneAndForARestoreTheSessionsAgain() throws IOException {
        Path memory = saved();
        SavedMemory.lock(memory);
        int server = (int) Files.getAttribute(Path.of("/proc/self"), "unix:uid");
        assertThat(Files.getAttribute(memory, "unix:uid")).isEqualTo(server);
        assertThat(Files.getAttribute(memory.resolve("checkpoint.img"), "unix:uid")).isEqualTo(server);
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(memory))).isEqualTo("rwx------");
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(memory.resolve("checkpoint.img"))))
                .as("read-only to all who reach it: only through a directory of the server's or the session's")
                .isEqualTo("rw-r--r--");
        Path fork = dir.resolve("fork-memory");
        SavedMemory.share(memory, fork);
        assertThat(SavedMemory.unlock(memory, UID)).isEqualTo(memory);
        assertThat(Files.getAttribute(memory, "unix:uid")).as("the directory is handed over").isEqualTo(UID);
        assertThat(Files.getAttribute(memory.resolve("checkpoint.img"), "unix:uid")).as("never the files: a fork"
                + " shares them").isEqualTo(server);
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(fork))).isEqualTo("rwx------");
        assertThat(Files.isSameFile(fork.resolve("checkpoint.img"), memory.resolve("checkpoint.img"))).isTrue();
        SavedMemory.delete(memory);
        assertThat(memory).doesNotExist();
    }

    @Test
    void aLinkOrADirectoryPlantedInItIsRefusedAndWhatItNamesIsLeftAlone() throws IOException {
        Path elsewhere = Files.writeString(dir.resolve("elsewhere"), "not the session's");
        int owner = (int) Files.getAttribute(elsewhere, "unix:uid");
        Path memory = saved();
        Files.createSymbolicLink(memory.resolve("pages.img"), elsewhere);
        assertThatThrownBy(() -> SavedMemory.unlock(memory, UID)).isInstanceOf(IOException.class)
                .hasMessageContaining("pages.img");
        assertThatThrownBy(() -> SavedMemory.lock(memory)).isInstanceOf(IOException.class);
        assertThat(Files.getAttribute(elsewhere, "unix:uid")).isEqualTo(owner);
        Files.delete(memory.resolve("pages.img"));
        Files.createDirectory(memory.resolve("deeper"));
        assertThatThrownBy(() -> SavedMemory.unlock(memory, UID)).isInstanceOf(IOException.class);
        Path linked = Files.createSymbolicLink(dir.resolve("linked"), memory);
        assertThatThrownBy(() -> SavedMemory.unlock(linked, UID)).as("the saved sandbox itself a link")
                .isInstanceOf(IOException.class).hasMessageContaining("no saved sandbox");
        SavedMemory.delete(linked);
        assertThat(memory.resolve("checkpoint.img")).as("deleting a link never deletes what it names").exists();
    }
}
