package dev.crucible.exec;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.Crucible;
import dev.crucible.egress.Egress;
import dev.crucible.egress.NetworkRequest;
import dev.crucible.egress.policy.EgressPolicy;
import dev.crucible.egress.proxy.EgressLimits;
import dev.crucible.egress.proxy.EgressResolver;
import dev.crucible.sandbox.SandboxConfig;
import dev.crucible.testhost.Capability;
import java.time.Duration;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import tools.jackson.databind.JsonNode;

/**
 * The portable launch chain ({@code sh} + {@code setpriv}, used when the JAR was built without a C compiler) holds
 * the same line: the hostile cases about identity, environment, descriptors, syscalls and resources.
 */
class FallbackLauncherTest {
    static final Set<String> IDS = Set.of("priv-identity-and-caps", "info-env-vars", "info-proc1-environ",
            "priv-leaked-fds", "priv-i386-abi-bypass", "net-vsock", "net-io-uring-socket-bypass",
            "res-fork-bomb-c", "res-memory-bomb-python", "res-cpu-spin-python", "out-stdout-flood-1GiB",
            "res-fd-exhaustion", "res-disk-fill-work", "proc-ptrace-attach");
    static Crucible crucible;

    @BeforeAll
    static void start() {
        crucible = Crucible.start(SandboxConfig.defaults().withSlots(2).withLaunchHelper(false), null);
        assertThat(crucible.sandbox().host().describe().getFirst()).contains("via sh + setpriv");
    }

    @AfterAll
    static void stop() {
        crucible.close();
    }

    static Stream<Arguments> cases() throws Exception {
        JsonNode expectations = HostileCasesTest.resource("expectations.json");
        List<Arguments> out = new ArrayList<>();
        for (JsonNode c : HostileCasesTest.resource("hostile-cases.json")) {
            String id = c.get("id").asString();
            if (IDS.contains(id)) {
                out.add(Arguments.of(id, c, expectations.get(id)));
            }
        }
        assertThat(out).hasSize(IDS.size());
        return out.stream();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void hostileCaseHoldsThroughShAndSetpriv(String id, JsonNode c, JsonNode expect) throws Exception {
        HostileCasesTest.runAndCheck(crucible.executor(), id, " (sh + setpriv)", c, expect, request -> request);
        assertThat(crucible.sandbox().awaitIdle(Duration.ofSeconds(15))).isTrue();
        assertThat(crucible.sandbox().host().liveRunGroups()).isZero();
    }

    @Test
    void egressJoinsTheServersNamespaceThroughNsenter() throws Exception {
        Capability.EGRESS.require(crucible.sandbox().egressUnavailable());
        Egress egress = Egress.of(EgressPolicy.parse("pypi.org"), EgressResolver.system(), EgressLimits.defaults(),
                InstantSource.system());
        crucible.executor().useEgress(egress);
        ExecuteResult r = crucible.executor().execute(ExecuteRequest.of("python", """
                import socket
                s = socket.create_connection(('127.0.0.1', 3128), timeout=10)
                s.sendall(b'CONNECT evil.test:443 HTTP/1.1\\r\\n\\r\\n')
                print(s.recv(200).split(b'\\r\\n')[0].decode())
                try:
                    socket.create_connection(('1.1.1.1', 443), timeout=5)
                except OSError as e:
                    print('direct', e.errno)
                """).withNetwork(NetworkRequest.allow(List.of("pypi.org"))));
        assertThat(r.stdout()).as(r.stderr()).contains("HTTP/1.1 403").contains("direct 101");
        assertThat(r.network().connections()).extracting(c -> c.reason()).containsExactly("not_listed");
    }
}
