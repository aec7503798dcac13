package dev.crucible.exec;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.TestHost;
import dev.crucible.runtime.LimitsSpec;
import dev.crucible.sandbox.Verdict;
import dev.crucible.testhost.Capability;
import dev.crucible.testhost.HostTraits;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Consumer;
import java.util.function.UnaryOperator;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.assertj.core.api.Assertions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * Every executable case of the hostile catalogue, run through the real executor and sandbox, with the outcome its
 * {@code expect} asks for (encoded in {@code hostile/expectations.json}), no leak of the canary variable, no
 * connection to the host's listeners, nothing left behind, and the next request served.
 */
public class HostileCasesTest {
    static final JsonMapper JSON = JsonMapper.builder().build();
    static final String CANARY = System.getenv("SERVER_API_TOKEN");

    /** One file of {@code hostile/} (the catalogues and their expectations), parsed. */
    public static JsonNode resource(String name) throws IOException {
        try (InputStream in = HostileCasesTest.class.getResourceAsStream("/hostile/" + name)) {
            return JSON.readTree(in);
        }
    }

    /** The public catalogue, then the ways in found since (own-cases.json: same shape, same expectations file). */
    static List<JsonNode> catalogue() throws IOException {
        List<JsonNode> all = new ArrayList<>();
        resource("hostile-cases.json").forEach(all::add);
        resource("own-cases.json").forEach(all::add);
        return all;
    }

    /** Every executable case (id, case, expectation), for any harness that runs them (the container's too). */
    public static Stream<Arguments> cases() throws IOException {
        JsonNode expectations = resource("expectations.json");
        List<Arguments> out = new ArrayList<>();
        for (JsonNode c : catalogue()) {
            if (!c.get("language").asString().equals("api")) {
                out.add(Arguments.of(c.get("id").asString(), c, expectations.get(c.get("id").asString())));
            }
        }
        return out.stream();
    }

    /** {@link #cases()} with the expectations of {@code overrides} (a file of {@code hostile/}) where it has one. */
    static Stream<Arguments> casesWith(String overrides) throws IOException {
        JsonNode replaced = resource(overrides);
        return cases().map(a -> replaced.has((String) a.get()[0])
                ? Arguments.of(a.get()[0], a.get()[1], replaced.get((String) a.get()[0])) : a);
    }

    @Test
    void everyExecutableCaseHasAnExpectation() throws IOException {
        JsonNode expectations = resource("expectations.json");
        List<String> missing = new ArrayList<>();
        for (JsonNode c : catalogue()) {
            if (!c.get("language").asString().equals("api") && !expectations.has(c.get("id").asString())) {
                missing.add(c.get("id").asString());
            }
        }
        assertThat(missing).isEmpty();
        assertThat(cases().count()).isEqualTo(76 + resource("own-cases.json").size());
    }

    @Test
    void theCopyMatchesTheSharedCatalogueWhenPresent() throws IOException {
        Path shared = Path.of("../../shared/hostile/hostile-cases.json");
        Capability.SHARED_CATALOGUE.require(Files.exists(shared) ? null
                : "the shared catalogue is not beside this clone: " + shared.toAbsolutePath().normalize());
        TreeSet<String> sharedIds = new TreeSet<>();
        JSON.readTree(shared.toFile()).forEach(c -> sharedIds.add(c.get("id").asString()));
        TreeSet<String> ours = new TreeSet<>();
        resource("hostile-cases.json").forEach(c -> ours.add(c.get("id").asString()));
        assertThat(ours).isEqualTo(sharedIds);
    }

    @Test
    void aHostThatRefusesTheIa32AbiItselfMayKillWithSigsegvOnlyThere() throws IOException {
        JsonNode expect = resource("expectations.json").get("priv-i386-abi-bypass");
        ExecuteResult segv = new ExecuteResult(Verdict.RUNTIME_ERROR, null, 11, "", "", false,
                false, 1, 1, 1, null, null, null, null, null);
        var refusing = EnumSet.of(HostTraits.Trait.IA32_REFUSED);
        var plain = EnumSet.noneOf(HostTraits.Trait.class);
        Assertions.assertThatCode(() -> checkOn(onHost(expect, refusing), segv))
                .doesNotThrowAnyException();
        Assertions.assertThatThrownBy(() -> checkOn(onHost(expect, plain), segv))
                .isInstanceOf(AssertionError.class);
        JsonNode gvisor = resource("gvisor-expectations.json").get("priv-i386-abi-bypass");
        ExecuteResult ran = new ExecuteResult(Verdict.OK, 0, null, "int80 socket -> 3\n", "",
                false, false, 1, 1, 1, null, null, null, null, null);
        Assertions.assertThatThrownBy(() -> checkOn(onHost(gvisor, refusing), ran))
                .as("a 32-bit call that ran is refused on every host").isInstanceOf(AssertionError.class);
    }

    private static void checkOn(JsonNode expect, ExecuteResult r) {
        check(expect, r, "synthetic result");
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void hostileCaseGetsItsExpectedOutcome(String id, JsonNode c, JsonNode expect) throws Exception {
        assertThat(CANARY).as("the test JVM must carry the canary (surefire environmentVariables)").isNotBlank();
        Executor executor = TestHost.crucible().executor();
        runAndCheck(id, "", c, expect, request -> request);
        TestHost.assertNothingLeft();
        ExecuteResult next = executor.execute(ExecuteRequest.of("python", "print('alive')"));
        assertThat(next.stdout()).as("the next request is served").isEqualTo("alive\n");
    }

    /**
     * Runs one case through the shared engine as {@code shape} makes its request (an image, egress), twice when its
     * expectation asks, and checks the expectation, the canary and that no listener of the host's was reached.
     *
     * @param where how the run differs, for the failure message ({@code " (in image)"}), or empty
     * @return the (last) result, for the caller's own checks
     */
    static ExecuteResult runAndCheck(String id, String where, JsonNode c, JsonNode expect,
            UnaryOperator<ExecuteRequest> shape) throws Exception {
        return runAndCheck(TestHost.crucible().executor(), id, where, c, expect, shape);
    }

    /** As {@link #runAndCheck(String, String, JsonNode, JsonNode, java.util.function.UnaryOperator)} on {@code executor}. */
    static ExecuteResult runAndCheck(Executor executor, String id, String where, JsonNode c, JsonNode expect,
            UnaryOperator<ExecuteRequest> shape) throws Exception {
        expect = onThisHost(expect);
        try (Listener listener = Listener.open(expect.path("listener").asString(""))) {
            String code = c.get("code").asString().replace("{HOST_PORT}", Integer.toString(listener.port()));
            LimitsSpec limits = untimed(expect, expect.has("limits")
                    ? JSON.treeToValue(expect.get("limits"), LimitsSpec.class) : null);
            ExecuteRequest request = shape.apply(new ExecuteRequest(c.get("language").asString(), code, null, null,
                    null, limits));
            ExecuteResult result = executor.execute(request);
            if (expect.path("run_twice").asBoolean(false)) {
                assertThat(result.status().wireName()).isEqualTo("ok");
                result = executor.execute(request);
            }
            String describe = id + where + " -> " + result.status() + " exit=" + result.exitCode() + " signal="
                    + result.signal() + "\nstdout: " + abbreviate(result.stdout()) + "\nstderr: "
                    + abbreviate(result.stderr());
            check(expect, result, describe);
            assertThat(listener.connections()).as("connections to the host listener\n" + describe).isZero();
            return result;
        }
    }

    /**
     * The limits a case runs with: where a timeout is not among its outcomes, its wall clock and CPU time are at least
     * {@link #UNTIMED_MS}, so that on a loaded host the memory, pid or output limit the case is about is met first
     * (the clock is not what such a case tests, and a longer one cannot turn a right outcome wrong); otherwise
     * {@code given} (null: the defaults).
     */
    static LimitsSpec untimed(JsonNode expect, LimitsSpec given) {
        for (JsonNode status : expect.get("status")) {
            if (status.asString().equals("timeout")) {
                return given;
            }
        }
        if (given == null) {
            return new LimitsSpec(UNTIMED_MS, UNTIMED_MS, null, null, null);
        }
        return new LimitsSpec(Math.max(UNTIMED_MS, given.timeoutMs() == null ? 0 : given.timeoutMs()),
                Math.max(UNTIMED_MS, given.cpuMs() == null ? 0 : given.cpuMs()), given.memoryMb(), given.outputBytes(),
                given.pids());
    }

    static final long UNTIMED_MS = 30_000;

    /** Asserts that {@code r} is what {@code expect} asks for and carries no canary; {@code describe} for failures. */
    public static void check(JsonNode expectation, ExecuteResult r, String describe) {
        JsonNode expect = onThisHost(expectation);
        List<String> statuses = new ArrayList<>();
        expect.get("status").forEach(s -> statuses.add(s.asString()));
        assertThat(r.status().wireName()).as(describe).isIn(statuses);
        String output = r.stdout() + r.stderr();
        assertThat(output).as("canary\n" + describe).doesNotContain(CANARY);
        forEach(expect, "stdout_contains", s -> assertThat(r.stdout()).as(describe).contains(s));
        forEach(expect, "stderr_contains", s -> assertThat(r.stderr()).as(describe).contains(s));
        forEach(expect, "output_contains", s -> assertThat(output).as(describe).contains(s));
        forEach(expect, "output_excludes", s -> assertThat(output).as(describe).doesNotContain(s));
        forEach(expect, "stdout_excludes", s -> assertThat(r.stdout()).as(describe).doesNotContain(s));
        if (expect.has("output_matches")) {
            assertThat(Pattern.compile(expect.get("output_matches").asString()).matcher(output).find())
                    .as("output matches " + expect.get("output_matches") + "\n" + describe).isTrue();
        }
        if (expect.has("stdout_matches")) {
            assertThat(Pattern.compile(expect.get("stdout_matches").asString()).matcher(r.stdout()).find())
                    .as("stdout matches " + expect.get("stdout_matches") + "\n" + describe).isTrue();
        }
        if (expect.has("stdout_not_matches")) {
            assertThat(Pattern.compile(expect.get("stdout_not_matches").asString()).matcher(r.stdout()).find())
                    .as("stdout does not match " + expect.get("stdout_not_matches") + "\n" + describe).isFalse();
        }
        if (expect.has("signal")) {
            List<Integer> signals = new ArrayList<>();
            (expect.get("signal").isArray() ? expect.get("signal") : JSON.createArrayNode().add(expect.get("signal")))
                    .forEach(n -> signals.add(n.asInt()));
            assertThat(r.signal()).as(describe).isIn(signals);
        }
        if (expect.has("stdout_truncated")) {
            assertThat(r.stdoutTruncated()).as(describe).isEqualTo(expect.get("stdout_truncated").asBoolean());
        }
        if (expect.has("stderr_truncated")) {
            assertThat(r.stderrTruncated()).as(describe).isEqualTo(expect.get("stderr_truncated").asBoolean());
        }
        if (expect.has("stdout_max_bytes")) {
            assertThat(r.stdout().getBytes(StandardCharsets.UTF_8).length).as(describe)
                    .isLessThanOrEqualTo(expect.get("stdout_max_bytes").asInt());
        }
        if (expect.has("env_keys")) {
            List<String> keys = r.stdout().lines().map(l -> l.substring(0, l.indexOf('='))).toList();
            List<String> allowed = new ArrayList<>();
            expect.get("env_keys").forEach(k -> allowed.add(k.asString()));
            assertThat(keys).as(describe).containsExactlyElementsOf(allowed);
        }
    }

    /**
     * {@code expect} with the entries of its {@code on_host} object that this host has ({@link HostTraits}) laid over
     * it: a field there replaces the expectation's, a null removes it. Each entry says {@code why}: the property holds
     * on every host, only the kernel's way of refusing differs.
     */
    static JsonNode onThisHost(JsonNode expect) {
        return onHost(expect, HostTraits.present());
    }

    /** As {@link #onThisHost(JsonNode)} on a host with {@code traits}. */
    static JsonNode onHost(JsonNode expect, Set<HostTraits.Trait> traits) {
        if (!expect.has("on_host")) {
            return expect;
        }
        ObjectNode merged = ((ObjectNode) expect).deepCopy();
        merged.remove("on_host");
        for (var entry : expect.get("on_host").properties()) {
            assertThat(entry.getValue().path("why").asString("")).as("on_host." + entry.getKey() + " says why")
                    .isNotBlank();
            if (traits.contains(HostTraits.Trait.of(entry.getKey()))) {
                for (var field : entry.getValue().properties()) {
                    if (field.getValue().isNull()) {
                        merged.remove(field.getKey());
                    } else if (!field.getKey().equals("why")) {
                        merged.set(field.getKey(), field.getValue());
                    }
                }
            }
        }
        return merged;
    }

    private static void forEach(JsonNode expect, String field, Consumer<String> check) {
        if (expect.has(field)) {
            for (Iterator<JsonNode> it = expect.get(field).iterator(); it.hasNext(); ) {
                check.accept(it.next().asString());
            }
        }
    }

    public static String abbreviate(String s) {
        return s.length() > 600 ? s.substring(0, 600) + "…(" + s.length() + " chars)" : s;
    }

    /** A real listener on the host that must see no connection: TCP on loopback, or an abstract unix socket. */
    interface Listener extends AutoCloseable {
        int port();

        int connections() throws Exception;

        @Override
        void close() throws Exception;

        static Listener open(String kind) throws IOException {
            return switch (kind) {
                case "tcp" -> new Tcp(new ServerSocket(0, 50, InetAddress.getLoopbackAddress()));
                case "abstract" -> Abstract.start();
                default -> new Tcp(null);
            };
        }
    }

    record Tcp(ServerSocket socket) implements Listener {
        @Override
        public int port() {
            return socket == null ? 9 : socket.getLocalPort();
        }

        @Override
        public int connections() throws IOException {
            if (socket == null) {
                return 0;
            }
            socket.setSoTimeout(50);
            int n = 0;
            try {
                while (true) {
                    socket.accept().close();
                    n++;
                }
            } catch (SocketTimeoutException e) {
                return n;
            }
        }

        @Override
        public void close() throws IOException {
            if (socket != null) {
                socket.close();
            }
        }
    }

    /** Java has no abstract unix sockets, so the host's Python holds one and counts what it can accept. */
    record Abstract(Process python) implements Listener {
        static final String SCRIPT = String.join("\n",
                "import socket, sys",
                "s = socket.socket(socket.AF_UNIX); s.bind('\\0sbx-abstract-test'); s.listen(16)",
                "print('ready', flush=True); sys.stdin.read(); s.setblocking(False); n = 0",
                "while True:",
                "    try: s.accept(); n += 1",
                "    except BlockingIOError: break",
                "print(n, flush=True)");

        static Abstract start() throws IOException {
            Process p = new ProcessBuilder("/usr/bin/python3", "-c", SCRIPT).redirectErrorStream(true).start();
            String ready = new String(p.getInputStream().readNBytes(6), StandardCharsets.UTF_8);
            assertThat(ready).isEqualTo("ready\n");
            return new Abstract(p);
        }

        @Override
        public int port() {
            return 9;
        }

        @Override
        public int connections() throws Exception {
            python.getOutputStream().close();
            String n = new String(python.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
            python.waitFor();
            return Integer.parseInt(n);
        }

        @Override
        public void close() {
            python.destroyForcibly();
            try {
                python.waitFor();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

}
