package dev.crucible.exec;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.TestHost;
import dev.crucible.egress.Egress;
import dev.crucible.egress.EgressReport;
import dev.crucible.egress.NetworkRequest;
import dev.crucible.egress.policy.EgressPolicy;
import dev.crucible.egress.proxy.EgressLimits;
import dev.crucible.egress.proxy.EgressResolver;
import dev.crucible.testhost.Capability;
import java.io.IOException;
import java.time.InstantSource;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import tools.jackson.databind.JsonNode;

/**
 * Every executable case of the hostile catalogue with egress on (the request asks for {@code pypi.org}, which the
 * operator allows): the sandbox then has AF_INET sockets and the proxy on its loopback, and still nothing of the host —
 * no listener of the host's reached, no canary, nothing left. The network cases still fail (they are not listed): a
 * case whose expected words change with the errno takes its entry of {@code egress-expectations.json}, which says why.
 */
class HostileCasesWithEgressTest {
    private static Egress before;

    @BeforeAll
    static void allowEgress() {
        Executor executor = TestHost.crucible().executor();
        String unavailable = TestHost.crucible().sandbox().egressUnavailable();
        Capability.EGRESS.require(unavailable);
        before = executor.egress();
        executor.useEgress(Egress.of(EgressPolicy.parse("pypi.org"), EgressResolver.system(), EgressLimits.defaults(),
                InstantSource.system()));
    }

    @AfterAll
    static void restore() {
        if (before != null) {
            TestHost.crucible().executor().useEgress(before);
        }
    }

    static Stream<Arguments> cases() throws IOException {
        return HostileCasesTest.casesWith("egress-expectations.json");
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void hostileCaseWithEgressGetsItsExpectedOutcome(String id, JsonNode c, JsonNode expect) throws Exception {
        ExecuteResult result = HostileCasesTest.runAndCheck(id, " (egress on)", c, expect,
                request -> request.withNetwork(NetworkRequest.allow(List.of("pypi.org"))));
        assertThat(result.network()).as("the run had egress").isNotNull();
        assertThat(result.network().connections()).as("nothing was allowed through: " + id)
                .noneMatch(EgressReport.Connection::allowed);
        TestHost.assertNothingLeft();
    }
}
