package dev.crucible.sandbox.seccomp;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.util.UserCache;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The filter itself: every denied name is known or knowingly absent, and nothing above the table gets through. */
class SeccompProgramTest {
    @Test
    void theProgramStartsWithTheRuleAboveTheHighestKnownNumber() {
        byte[] program = SeccompProgram.build();
        ByteBuffer b = ByteBuffer.wrap(program).order(ByteOrder.nativeOrder());
        assertThat(b.getShort(0)).as("load the architecture").isEqualTo((short) 0x20);
        assertThat(b.getShort(4 * 8)).as("jump if above the table").isEqualTo((short) 0x25);
        int highest = b.getInt(4 * 8 + 4);
        assertThat(highest).as("libseccomp's newest call here").isBetween(400, 1023);
        assertThat(b.getInt(9 * 8 + 4)).as("EPERM").isEqualTo(0x00050000 | 1);
        assertThat(b.getInt(10 * 8 + 4)).as("ENOSYS").isEqualTo(0x00050000 | 38);
    }

    @Test
    void theCachedProgramIsTheOneLibseccompBuildsAndIsUsedOnceThere(@TempDir Path dir) throws Exception {
        UserCache cache = new UserCache(dir);
        byte[] built = SeccompProgram.build();
        assertThat(Arrays.equals(SeccompProgram.cachedOrBuilt(cache), built)).as("libseccomp's program").isTrue();
        Path file = dir.resolve(SeccompProgram.cacheName());
        assertThat(file).exists();
        assertThat(Arrays.equals(Files.readAllBytes(file), built)).as("the cache file").isTrue();

        // what is there is what is loaded: a different (well-formed) program in the cache comes back as it is
        byte[] other = built.clone();
        other[other.length - 1] ^= 1;
        Files.write(file, other);
        assertThat(Arrays.equals(SeccompProgram.cachedOrBuilt(cache), other)).as("the cached program").isTrue();
    }

    @Test
    void aDamagedCacheIsBuiltAgainAndReplaced(@TempDir Path dir) throws Exception {
        UserCache cache = new UserCache(dir);
        byte[] built = SeccompProgram.build();
        Path file = dir.resolve(SeccompProgram.cacheName());
        cache.write(SeccompProgram.cacheName(), Arrays.copyOf(built, built.length - 3)); // cut mid-instruction
        assertThat(Arrays.equals(SeccompProgram.cachedOrBuilt(cache), built)).as("libseccomp's program").isTrue();
        assertThat(Arrays.equals(Files.readAllBytes(file), built)).as("the cache file").isTrue();

        byte[] noPrefix = Arrays.copyOfRange(built, 11 * 8, built.length); // libseccomp's part alone
        cache.write(SeccompProgram.cacheName(), noPrefix);
        assertThat(Arrays.equals(SeccompProgram.cachedOrBuilt(cache), built)).as("libseccomp's program").isTrue();
    }

    @Test
    void aDeniedNameMayBeUnknownOnlyWhenItIsKnowinglySo() {
        // the build itself throws for any other unknown name; here: the list of exceptions stays small and named
        assertThat(SeccompProgram.DENIED).containsAll(List.of("modify_ldt", "uselib", "open_tree",
                "open_tree_attr", "move_mount", "fsopen"));
        assertThat(SeccompProgram.MAY_BE_UNKNOWN).allMatch(SeccompProgram.DENIED::contains);
    }

    @Test
    void seccompProgramIsBuiltByLibseccompAndChecksTheArchitecture() {
        byte[] program = SeccompProgram.build();
        assertThat(program.length % 8).isZero();
        assertThat(program.length / 8).isGreaterThan(50);
        // first instruction: load seccomp_data.arch (offset 4); then compare with AUDIT_ARCH_X86_64 / AARCH64
        assertThat(program[0]).isEqualTo((byte) 0x20);
        assertThat(program[4]).isEqualTo((byte) 4);
    }
}
