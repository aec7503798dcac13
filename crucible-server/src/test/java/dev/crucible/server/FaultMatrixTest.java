package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.Crucible;
import dev.crucible.TestHost;
import dev.crucible.sandbox.Limits;
import dev.crucible.sandbox.SandboxConfig;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.IntFunction;
import java.util.function.Predicate;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Issue 25's fault matrix on the real server: a zygote, a warm-pool agent and a session interpreter each stopped
 * ({@code SIGSTOP}) or killed ({@code SIGKILL}) from the host while requests come. For each: every request answers
 * within its deadline (its timeout plus {@link Limits#GRACE_MS}) with a right answer or a sandbox error that says
 * why, the stuck part is replaced and counted in the metrics, nothing is left behind, and the server serves correctly
 * after. The zygote's cases run on an engine of their own (the shared test engine spawns).
 */
class FaultMatrixTest {
    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final long TIMEOUT_MS = 2_000;
    private static Crucible zygotes;

    @BeforeAll
    static void start() {
        zygotes = Crucible.start(SandboxConfig.defaults().withSlots(4), null);
    }

    /** A pool holds slots and processes: none is left for the next test's counts. */
    @AfterEach
    void noPool() {
        zygotes.startPool(Map.of());
        TestHost.crucible().startPool(Map.of());
    }

    @AfterAll
    static void stop() {
        zygotes.close();
    }

    /** The finding: six requests and a Bash one while the zygote is stopped got no answer at all. */
    @Test
    void aStoppedZygoteIsReplacedAndEveryRequestAnswersWithinItsDeadline() throws Exception {
        try (CrucibleServer server = CrucibleServer.start(Http.config().withPort(0).withTokens(Set.of())
                .withConcurrency(4, 64).withPool(Map.of("python", 2)), zygotes)) {
            Http http = Http.to(server, null);
            assertThat(run(http, "python", "print(6 * 7)").path("stdout").asString()).isEqualTo("42\n");
            long zygote = await("a zygote", () -> zygotePid(-1));
            signal(zygote, "STOP");
            try {
                List<Answer> answers = concurrently(http, 6, n -> "print(" + n + " * 3)", "python");
                answers.add(timed(http, "bash", "echo $((20 + 1))"));
                for (Answer a : answers) {
                    assertThat(a.millis()).as("answered within its deadline: " + a.body()).isLessThanOrEqualTo(
                            TIMEOUT_MS + Limits.GRACE_MS);
                    assertRightOrSandboxError(a, "zygote");
                }
                assertThat(answers.getLast().body().path("stdout").asString()).isEqualTo("21\n");
            } finally {
                signal(zygote, "CONT"); // if it still exists: a replaced zygote has been killed
            }
            long next = await("a new zygote", () -> zygotePid(zygote));
            await("the stuck zygote killed", () -> ProcessHandle.of(zygote).map(ProcessHandle::isAlive).orElse(false)
                    ? null : true);
            assertThat(next).isNotEqualTo(zygote);
            assertThat(replacements(http, "zygote", "unanswered")).isGreaterThanOrEqualTo(1);
            assertServesCorrectly(http);
            zygotes.startPool(Map.of()); // the pool's sandboxes hold slots: counted out before looking for leftovers
            assertNothingLeft(zygotes);
        }
    }

    @Test
    void aKilledZygoteIsReplacedAndTheNextRequestsRun() throws Exception {
        try (CrucibleServer server = CrucibleServer.start(Http.config().withPort(0).withTokens(Set.of())
                .withConcurrency(4, 64).withPool(Map.of()), zygotes)) {
            Http http = Http.to(server, null);
            run(http, "python", "pass");
            long zygote = await("a zygote", () -> zygotePid(-1));
            long before = replacements(http, "zygote", "died");
            long unanswered = replacements(http, "zygote", "unanswered");
            List<Future<Answer>> during = new ArrayList<>();
            try (ExecutorService clients = Executors.newFixedThreadPool(4)) {
                for (int i = 0; i < 4; i++) {
                    int n = i;
                    during.add(clients.submit(() -> timed(http, "python", "import time\ntime.sleep(0.5)\nprint(" + n
                            + ")")));
                }
                signal(zygote, "KILL");
                for (Future<Answer> f : during) {
                    Answer a = f.get();
                    assertThat(a.millis()).isLessThanOrEqualTo(TIMEOUT_MS + Limits.GRACE_MS);
                    assertRightOrSandboxError(a, "zygote");
                }
            }
            await("a new zygote", () -> zygotePid(zygote));
            // whichever noticed first (a fork cut off before the zygote's bubblewrap followed it out, the watchdog):
            // a death, never a zygote that stopped answering (flaked so before Zygote.ended() asked /proc)
            assertThat(replacements(http, "zygote", "died")).isGreaterThan(before);
            assertThat(replacements(http, "zygote", "unanswered")).isEqualTo(unanswered);
            assertServesCorrectly(http);
            assertNothingLeft(zygotes);
        }
    }

    /**
     * A warm agent that is stopped never takes its program: the request is not charged a timeout for it, it runs again
     * in a new sandbox within its deadline, and the agent is counted as replaced.
     */
    @Test
    void aStoppedWarmPoolAgentIsReplacedAndItsRequestRunsElsewhere() throws Exception {
        Crucible engine = TestHost.crucible(); // the spawn path: pooled agents are sandboxes of their own
        try (CrucibleServer server = CrucibleServer.start(Http.config().withPort(0).withTokens(Set.of())
                .withConcurrency(4, 64).withPool(Map.of("python", 2)), engine)) {
            Http http = Http.to(server, null);
            List<Long> agents = awaitAll("two warm agents", 2, FaultMatrixTest::poolAgentPids);
            agents.forEach(pid -> signal(pid, "STOP"));
            try {
                long before = replacements(http, "pool_agent", "unanswered");
                for (int i = 0; i < 2; i++) {
                    Answer a = timed(http, "python", "print('ran', " + i + ")");
                    assertThat(a.millis()).isLessThanOrEqualTo(TIMEOUT_MS + Limits.GRACE_MS);
                    assertThat(a.body().path("status").asString()).as(a.body().toString()).isEqualTo("ok");
                    assertThat(a.body().path("stdout").asString()).isEqualTo("ran " + i + "\n");
                }
                assertThat(replacements(http, "pool_agent", "unanswered")).isGreaterThanOrEqualTo(before + 1);
            } finally {
                agents.forEach(pid -> signal(pid, "CONT"));
            }
            assertServesCorrectly(http);
            engine.startPool(Map.of());
            assertNothingLeft(engine);
        }
    }

    @Test
    void aKilledWarmPoolAgentIsNeverHandedOut() throws Exception {
        Crucible engine = TestHost.crucible();
        try (CrucibleServer server = CrucibleServer.start(Http.config().withPort(0).withTokens(Set.of())
                .withConcurrency(4, 64).withPool(Map.of("python", 2)), engine)) {
            Http http = Http.to(server, null);
            awaitAll("two warm agents", 2, FaultMatrixTest::poolAgentPids).forEach(pid -> signal(pid, "KILL"));
            for (int i = 0; i < 3; i++) {
                Answer a = timed(http, "python", "print(" + i + ")");
                assertThat(a.millis()).isLessThanOrEqualTo(TIMEOUT_MS + Limits.GRACE_MS);
                assertThat(a.body().path("stdout").asString()).as(a.body().toString()).isEqualTo(i + "\n");
            }
            engine.startPool(Map.of());
            assertNothingLeft(engine);
        }
    }

    /**
     * A stopped interpreter answers nothing: the cell answers by its timeout and grace with a timeout that says the
     * session was restarted, the interpreter is replaced and counted, and the next cell runs.
     */
    @Test
    void aStoppedSessionInterpreterIsReplacedWithinTheCellsDeadline() throws Exception {
        try (CrucibleServer server = CrucibleServer.start(Http.config().withPort(0).withTokens(Set.of())
                .withPool(Map.of()), TestHost.crucible())) {
            Http http = Http.to(server, null);
            String id = session(http);
            assertThat(cell(http, id, "x = 41", 5_000).path("status").asString()).isEqualTo("ok");
            List<Long> interpreter = interpreterPids(id);
            interpreter.forEach(pid -> signal(pid, "STOP"));
            try {
                long t0 = System.nanoTime();
                JsonNode stuck = cell(http, id, "print(x + 1)", TIMEOUT_MS);
                long ms = (System.nanoTime() - t0) / 1_000_000;
                assertThat(ms).as(stuck.toString()).isLessThanOrEqualTo(TIMEOUT_MS + Limits.GRACE_MS);
                assertThat(stuck.path("status").asString()).isEqualTo("timeout");
                assertThat(stuck.path("error").path("message").asString()).contains("restarted");
            } finally {
                interpreter.forEach(pid -> signal(pid, "CONT"));
            }
            assertThat(replacements(http, "interpreter", "unanswered")).isGreaterThanOrEqualTo(1);
            JsonNode next = cell(http, id, "print('again')", 5_000);
            assertThat(next.path("status").asString()).isEqualTo("ok");
            assertThat(next.path("stdout").asString()).isEqualTo("again\n");
            assertThat(interpreter).allMatch(pid -> ProcessHandle.of(pid).map(p -> !p.isAlive()).orElse(true));
            assertThat(http.delete("/v1/sessions/" + id).statusCode()).isEqualTo(200);
        }
    }

    @Test
    void aKilledSessionInterpreterIsReplacedAtTheNextCell() throws Exception {
        try (CrucibleServer server = CrucibleServer.start(Http.config().withPort(0).withTokens(Set.of())
                .withPool(Map.of()), TestHost.crucible())) {
            Http http = Http.to(server, null);
            String id = session(http);
            assertThat(cell(http, id, "x = 1", 5_000).path("status").asString()).isEqualTo("ok");
            long before = replacements(http, "interpreter", "died");
            List<Long> interpreter = interpreterPids(id);
            interpreter.forEach(pid -> signal(pid, "KILL"));
            for (long pid : interpreter) {
                ProcessHandle.of(pid).ifPresent(p -> p.onExit().join());
            }
            JsonNode next = cell(http, id, "print('fresh')", 5_000);
            assertThat(next.path("stdout").asString()).as(next.toString()).isEqualTo("fresh\n");
            assertThat(replacements(http, "interpreter", "died")).isGreaterThan(before);
            assertThat(http.delete("/v1/sessions/" + id).statusCode()).isEqualTo(200);
        }
    }

    /** Each part's state is in /readyz and the metrics; /livez answers; a draining server is not ready but live. */
    @Test
    void readinessAndLivenessReportEachPart() throws Exception {
        CrucibleServer server = CrucibleServer.start(Http.config().withPort(0).withTokens(Set.of())
                .withPool(Map.of()), zygotes);
        try {
            Http http = Http.to(server, null);
            run(http, "python", "pass"); // a zygote runs from here on
            HttpResponse<String> ready = http.get("/readyz");
            assertThat(ready.statusCode()).isEqualTo(200);
            JsonNode body = JSON.readTree(ready.body());
            assertThat(body.path("status").asString()).isEqualTo("ready");
            List<String> parts = new ArrayList<>();
            body.path("parts").forEach(p -> parts.add(p.path("part").asString() + "=" + p.path("state").asString()));
            assertThat(parts).contains("admission=ok", "slots=ok", "zygote:python=ok");
            HttpResponse<String> live = http.get("/livez");
            assertThat(live.statusCode()).isEqualTo(200);
            assertThat(JSON.readTree(live.body()).path("status").asString()).isEqualTo("live");
            assertThat(http.get("/metrics").body()).contains("crucible_part_state{part=\"slots\"} 0.0",
                    "crucible_part_state{part=\"zygote:python\"} 0.0");
            assertThat(http.get("/healthz").statusCode()).isEqualTo(200);
        } finally {
            server.close();
        }
    }

    // --- helpers ---

    record Answer(long millis, int code, JsonNode body) {}

    private static Answer timed(Http http, String language, String code) throws Exception {
        long t0 = System.nanoTime();
        HttpResponse<String> r = http.postJson("/v1/execute", JSON.writeValueAsString(Map.of("language", language,
                "code", code, "limits", Map.of("timeout_ms", TIMEOUT_MS))));
        return new Answer((System.nanoTime() - t0) / 1_000_000, r.statusCode(), JSON.readTree(r.body()));
    }

    private static JsonNode run(Http http, String language, String code) throws Exception {
        Answer a = timed(http, language, code);
        assertThat(a.code()).as(a.body().toString()).isEqualTo(200);
        return a.body();
    }

    private static List<Answer> concurrently(Http http, int n, IntFunction<String> code,
            String language) throws Exception {
        List<Future<Answer>> futures = new ArrayList<>();
        try (ExecutorService clients = Executors.newFixedThreadPool(n)) {
            for (int i = 0; i < n; i++) {
                String program = code.apply(i);
                futures.add(clients.submit(() -> timed(http, language, program)));
            }
        }
        List<Answer> answers = new ArrayList<>();
        for (Future<Answer> f : futures) {
            answers.add(f.get());
        }
        return answers;
    }

    /** A right answer (ok, the program's output), or a sandbox error whose reason names {@code part}. */
    private static void assertRightOrSandboxError(Answer a, String part) {
        assertThat(a.code()).as(a.body().toString()).isEqualTo(200);
        String status = a.body().path("status").asString();
        if (status.equals("sandbox_error")) {
            assertThat(a.body().path("stderr").asString() + a.body().toString()).contains(part);
        } else {
            assertThat(status).as(a.body().toString()).isEqualTo("ok");
            assertThat(a.body().path("stdout").asString()).isNotEmpty();
        }
    }

    private static void assertServesCorrectly(Http http) throws Exception {
        List<Answer> after = concurrently(http, 4, n -> "print(" + n + " + 100)", "python");
        for (int i = 0; i < after.size(); i++) {
            assertThat(after.get(i).body().path("status").asString()).as(after.get(i).body().toString()).isEqualTo("ok");
            assertThat(after.get(i).body().path("stdout").asString()).isEqualTo((i + 100) + "\n");
        }
    }

    /** {@code crucible_part_replacements_total{part,reason}} as the server's metrics say now. */
    static long replacements(Http http, String part, String reason) throws Exception {
        Matcher m = Pattern.compile("crucible_part_replacements_total\\{part=\"" + part + "\",reason=\"" + reason
                + "\"\\} (\\d+)").matcher(http.get("/metrics").body());
        assertThat(m.find()).as("the replacements metric for " + part + "/" + reason).isTrue();
        return Long.parseLong(m.group(1));
    }

    private static String session(Http http) throws Exception {
        HttpResponse<String> r = http.postJson("/v1/sessions", "{\"language\":\"python\"}");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(201);
        return JSON.readTree(r.body()).path("id").asString();
    }

    private static JsonNode cell(Http http, String id, String code, long timeoutMs) throws Exception {
        HttpResponse<String> r = http.postJson("/v1/sessions/" + id + "/execute", JSON.writeValueAsString(Map.of(
                "code", code, "timeout_ms", timeoutMs)));
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        return JSON.readTree(r.body());
    }

    /** The running zygote's interpreter (not its bwrap, whose argv holds the same text), other than {@code not}. */
    private static Long zygotePid(long not) {
        return ProcessHandle.current().descendants().filter(ProcessHandle::isAlive)
                .filter(p -> p.info().command().orElse("").contains("python3")
                        && p.info().commandLine().orElse("").contains("Crucible's Python zygote")
                        && !p.parent().flatMap(q -> q.info().command()).orElse("").contains("python3")) // not a child
                .map(ProcessHandle::pid).filter(pid -> pid != not).findFirst().orElse(null);
    }

    /** The warm-pool agents' interpreters (spawned: python3 -c with the agent's source). */
    private static List<Long> poolAgentPids() {
        return ProcessHandle.current().descendants().filter(ProcessHandle::isAlive)
                .filter(p -> p.info().command().orElse("").contains("python3")
                        && p.info().commandLine().orElse("").contains("_crucible_agent"))
                .map(ProcessHandle::pid).toList();
    }

    /** The session's interpreter: the python3 running the session agent (one session at a time in these tests). */
    private static List<Long> interpreterPids(String id) throws Exception {
        return awaitAll("session " + id + "'s interpreter", 1, () -> ProcessHandle.current().descendants()
                .filter(ProcessHandle::isAlive)
                .filter(p -> p.info().command().orElse("").contains("python3")
                        && p.info().commandLine().orElse("").contains("Crucible's Python session agent"))
                .map(ProcessHandle::pid).toList());
    }

    private static void signal(long pid, String signal) {
        try {
            new ProcessBuilder("kill", "-" + signal, Long.toString(pid)).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD).start().waitFor();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private static <T> T await(String what, Supplier<T> probe) throws InterruptedException {
        return Awaitility.await(what).atMost(Duration.ofSeconds(30)).pollDelay(Duration.ZERO)
                .pollInterval(Duration.ofMillis(20)).until(probe::get, Objects::nonNull);
    }

    private static <T> List<T> awaitAll(String what, int atLeast, Supplier<List<T>> probe)
            throws InterruptedException {
        return await(what, () -> {
            List<T> found = probe.get();
            return found.size() >= atLeast ? found : null;
        });
    }

    /** No run cgroup, no process but the zygotes, the launcher idle: what {@link TestHost#assertNothingLeft} checks. */
    private static void assertNothingLeft(Crucible engine) throws Exception {
        assertThat(engine.sandbox().awaitIdle(Duration.ofSeconds(15))).as("sandbox idle").isTrue();
        await("no run cgroups left", () -> engine.sandbox().host().liveRunGroups() == 0 ? true : null);
        Predicate<ProcessHandle> zygoteBox = p -> p.info().commandLine().orElse("").contains("/tmp/.crucible-zygote")
                || p.info().commandLine().orElse("").contains("Crucible's Python zygote");
        await("no processes left but the zygote's", () -> ProcessHandle.current().descendants()
                .filter(ProcessHandle::isAlive).filter(zygoteBox.negate()).count() == 0 ? true : null);
        int base = engine.sandbox().host().uidBase();
        await("no process of a slot uid left", () -> {
            try {
                return TestHost.processesOfUids(base, base + 4) == 0 ? true : null;
            } catch (IOException e) {
                return null;
            }
        });
    }
}
