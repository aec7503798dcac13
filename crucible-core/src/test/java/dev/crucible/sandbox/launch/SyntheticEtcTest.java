package dev.crucible.sandbox.launch;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.TestDirs;
import dev.crucible.sandbox.Limits;
import dev.crucible.sandbox.SandboxRoot;
import dev.crucible.sandbox.SandboxSpec;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/** The synthetic /etc's mount points for binds below /etc, made once however many launches ask at the same moment. */
class SyntheticEtcTest {
    @Test
    void launchesThatAskForTheSameMountPointsAtOnceAllGetThem() throws Exception {
        List<String> binds = new ArrayList<>();
        try (var entries = Files.list(Path.of("/etc"))) {
            entries.filter(p -> !Files.isSymbolicLink(p)).limit(12).forEach(p -> binds.add(p.toString()));
        }
        binds.add("/etc/no-such-file-on-this-host");
        assertThat(binds).as("some files and directories in the host's /etc").hasSizeGreaterThan(2);
        SandboxSpec spec = new SandboxSpec(List.of("/bin/true"), Map.of(), Map.of(), null, false, binds,
                SandboxRoot.HOST, null, Limits.MAXIMUM);
        int tries = 20;
        for (int t = 0; t < tries; t++) {
            SyntheticEtc etc = SyntheticEtc.write(TestDirs.create("synthetic-etc").resolve("etc"));
            CountDownLatch go = new CountDownLatch(1);
            try (var threads = Executors.newFixedThreadPool(8)) {
                List<Future<?>> launches = new ArrayList<>();
                for (int i = 0; i < 8; i++) {
                    launches.add(threads.submit(() -> {
                        go.await();
                        etc.addMountPoints(spec);
                        return null;
                    }));
                }
                go.countDown();
                for (Future<?> launch : launches) {
                    launch.get(); // throws what addMountPoints threw
                }
            }
            for (String bind : binds) {
                Path point = etc.dir().resolve(bind.substring("/etc/".length()));
                assertThat(Files.exists(point)).as(bind).isEqualTo(Files.exists(Path.of(bind)));
                if (Files.exists(point)) {
                    assertThat(Files.isDirectory(point)).as(bind).isEqualTo(Files.isDirectory(Path.of(bind)));
                }
            }
        }
    }
}
