package dev.crucible.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.util.UserCache;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A runtime's version is asked once per build of its executable, across processes. */
class VersionCacheTest {
    @TempDir
    Path dir;

    @Test
    void aVersionIsAskedAgainOnlyWhenTheExecutableChanges() throws Exception {
        Path tool = Files.writeString(dir.resolve("tool"), "#!/bin/sh\necho 1.0\n");
        List<String> command = List.of(tool.toString(), "--version");
        UserCache cache = new UserCache(dir.resolve("cache"));
        AtomicInteger asked = new AtomicInteger();

        VersionCache first = new VersionCache(cache);
        assertThat(first.get(command, () -> "1." + asked.incrementAndGet())).isEqualTo("1.1");
        first.save();
        assertThat(new VersionCache(cache).get(command, () -> "1." + asked.incrementAndGet()))
                .as("a later process, the executable unchanged").isEqualTo("1.1");
        assertThat(asked).hasValue(1);

        Files.setLastModifiedTime(tool, FileTime.fromMillis(Files.getLastModifiedTime(tool).toMillis() + 60_000));
        assertThat(new VersionCache(cache).get(command, () -> "1." + asked.incrementAndGet()))
                .as("after an upgrade").isEqualTo("1.2");
        assertThat(new VersionCache(cache).get(List.of(tool.toString(), "-V"), () -> "9." + asked.incrementAndGet()))
                .as("another version command").isEqualTo("9.3");
    }

    @Test
    void aFailedProbeIsNotRemembered() throws Exception {
        Path tool = Files.writeString(dir.resolve("tool"), "");
        UserCache cache = new UserCache(dir.resolve("cache"));
        AtomicInteger asked = new AtomicInteger();
        VersionCache versions = new VersionCache(cache);
        versions.get(List.of(tool.toString()), () -> { asked.incrementAndGet(); return ""; });
        versions.save();
        new VersionCache(cache).get(List.of(tool.toString()), () -> { asked.incrementAndGet(); return ""; });
        assertThat(asked).hasValue(2);
        assertThat(dir.resolve("cache").resolve(VersionCache.NAME)).doesNotExist();
    }
}
