package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.crucible.Crucible;
import dev.crucible.TestHost;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.json.JsonMapper;

/**
 * A bounded soak: 500 requests at concurrency 8, a tenth of them hostile (timeouts, fork and memory bombs, output
 * floods), against the real server. Zero 5xx, every answer correct, and nothing leaked: processes, cgroups, file
 * descriptors and program directories are counted before and after.
 */
class SoakTest {
    static final int REQUESTS = 500;
    static final int CONCURRENCY = 8;
    static final List<String> HOSTILE = List.of(
            "{\"language\":\"python\",\"code\":\"while True: pass\",\"limits\":{\"timeout_ms\":1000}}",
            "{\"language\":\"python\",\"code\":\"import os\\nwhile True:\\n    try: os.fork()\\n    except OSError: pass\","
                    + "\"limits\":{\"timeout_ms\":1000}}",
            "{\"language\":\"python\",\"code\":\"x = []\\nwhile True: x.append(bytearray(1 << 24))\"}",
            "{\"language\":\"bash\",\"code\":\"yes flood\"}",
            "{\"language\":\"javascript\",\"code\":\"for(;;){}\",\"limits\":{\"timeout_ms\":1000}}");
    static final Set<String> HOSTILE_VERDICTS = Set.of("timeout", "memory_limit", "output_limit");

    @Test
    void fiveHundredRequestsWithHostileOnesLeaveNothingBehind() throws Exception {
        var engine = TestHost.crucible();
        try (CrucibleServer server = CrucibleServer.start(Http.config().withPort(0).withTokens(Set.of())
                .withConcurrency(4, 64).withPool(Map.of("python", 2)), engine)) {
            Http http = Http.to(server, null);
            // warm up, then count what exists with the pool full
            http.postJson("/v1/execute", "{\"language\":\"python\",\"code\":\"print(0)\"}");
            Counts before = Counts.settled(engine);

            JsonMapper json = JsonMapper.builder().build();
            AtomicInteger fiveHundreds = new AtomicInteger();
            Map<String, AtomicInteger> verdicts = new ConcurrentHashMap<>();
            long t0 = System.nanoTime();
            try (ExecutorService clients = Executors.newFixedThreadPool(CONCURRENCY)) {
                List<Future<?>> done = new ArrayList<>();
                for (int i = 0; i < REQUESTS; i++) {
                    int n = i;
                    done.add(clients.submit(() -> {
                        boolean hostile = n % 10 == 0;
                        String body = hostile ? HOSTILE.get((n / 10) % HOSTILE.size())
                                : "{\"language\":\"python\",\"code\":\"print(" + n + " * 2)\"}";
                        HttpResponse<String> r = http.postJson("/v1/execute", body);
                        if (r.statusCode() >= 500) {
                            fiveHundreds.incrementAndGet();
                        }
                        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
                        var result = json.readTree(r.body());
                        String status = result.get("status").asString();
                        verdicts.computeIfAbsent(status, k -> new AtomicInteger()).incrementAndGet();
                        if (hostile) {
                            assertThat(status).as(body).isIn(HOSTILE_VERDICTS);
                        } else {
                            assertThat(result.get("stdout").asString()).isEqualTo((n * 2) + "\n");
                        }
                        return null;
                    }));
                }
                for (Future<?> f : done) {
                    f.get();
                }
            }
            double seconds = (System.nanoTime() - t0) / 1e9;
            System.out.printf("soak: %d requests in %.1f s (%.0f/s), verdicts %s%n", REQUESTS, seconds, REQUESTS / seconds,
                    verdicts);
            assertThat(fiveHundreds).hasValue(0);
            Counts after = Counts.settled(engine);
            assertThat(after).isEqualTo(before);
        }
    }

    /** What a leak would grow: processes below this JVM, run cgroups, this JVM's pipes, program dirs. */
    record Counts(long processes, int cgroups, long pipes, long programDirs) {
        static Counts settled(Crucible engine) throws Exception {
            AtomicReference<Counts> last = new AtomicReference<>();
            return await("the engine settled: the pool full, the same counts two looks in a row")
                    .atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(100))
                    .until(() -> take(engine),
                            now -> now.equals(last.getAndSet(now)) && engine.executor().pool().size() == 2);
        }

        static Counts take(Crucible engine) throws Exception {
            long processes = ProcessHandle.current().descendants().filter(ProcessHandle::isAlive).count();
            long fds;
            try (Stream<Path> s = Files.list(Path.of("/proc/self/fd"))) {
                // a run's stdin, stdout and stderr are pipes; sockets (keep-alive connections) and the JVM's own
                // files come and go on their own
                fds = s.filter(fd -> {
                    try {
                        return Files.readSymbolicLink(fd).toString().startsWith("pipe:");
                    } catch (IOException e) {
                        return false;
                    }
                }).count();
            }
            long dirs;
            try (Stream<Path> s = Files.list(engine.sandbox().host().workRoot().resolve("programs"))) {
                dirs = s.count();
            }
            return new Counts(processes, engine.sandbox().host().liveRunGroups(), fds, dirs);
        }
    }

}
