package dev.crucible.egress.policy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.InetAddress;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/** The allowlist as an operator writes it and as a request narrows it (the address table: AddressRulesTest). */
class EgressPolicyTest {
    private static final EgressPolicy OPERATOR = EgressPolicy.parse(
            "PyPI.org, files.pythonhosted.org:443, *.example.com, mirror.test:8080, 10.1.0.0/16:3128,"
                    + " 127.0.0.1:9000, [fd00:1::/32]:443, registry.npmjs.org.");

    @Test
    void entriesAreReadIntoCanonicalFormWithPortsWritten() {
        assertThat(OPERATOR.entries()).containsExactly("pypi.org:443", "files.pythonhosted.org:443",
                "*.example.com:443", "mirror.test:8080", "10.1.0.0/16:3128", "127.0.0.1:9000", "[fd00:1::/32]:443",
                "registry.npmjs.org:443");
        assertThat(EgressPolicy.parse(OPERATOR.toString())).isEqualTo(OPERATOR);
        assertThat(EgressPolicy.parse("a.test, a.test:443").entries()).containsExactly("a.test:443");
    }

    /** A sandbox's no_proxy keeps its own loopback off the proxy: a loopback entry is valid but says so. */
    @Test
    void aLoopbackEntrySaysASandboxsProxyVariablesDoNotReachIt() {
        EgressPolicy policy = EgressPolicy.parse("127.0.0.1:8000, pypi.org, [::1]:9000, localhost:80, 10.0.0.5:3141,"
                + " 127.0.0.0/8:81, 127.0.0.2:82, *.example.com");
        assertThat(policy.loopbackWarnings()).hasSize(4).allSatisfy(w -> assertThat(w).contains("no_proxy")
                .contains("serve it on another address of the host's"));
        assertThat(policy.loopbackWarnings()).extracting(w -> w.split(" ")[2])
                .containsExactly("127.0.0.1:8000", "[::1]:9000", "localhost:80", "127.0.0.0/8:81");
        assertThat(EgressPolicy.parse("pypi.org, 10.0.0.5:3141").loopbackWarnings()).isEmpty();
    }

    @ParameterizedTest(name = "{0}:{1} -> {2}")
    @CsvSource({
        "pypi.org, 443, true", "PYPI.ORG., 443, true", "pypi.org, 80, false", "evil.pypi.org, 443, false",
        "a.example.com, 443, true", "deep.a.example.com, 443, true", "example.com, 443, false",
        "a.example.com, 80, false", "notexample.com, 443, false", "mirror.test, 8080, true", "mirror.test, 443, false",
        "10.1.2.3, 3128, true", "10.2.0.1, 3128, false", "10.1.2.3, 443, false", "127.0.0.1, 9000, true",
        "127.0.0.1, 9001, false", "[fd00:1::5], 443, true", "fd00:1::5, 443, true", "fd00:2::5, 443, false",
        "127.1, 9000, false", "2130706433, 9000, false", "0x7f000001, 9000, false", "pypi.org:443, 443, false"})
    void allowsOnlyListedHostsOnListedPorts(String host, int port, boolean allowed) {
        assertThat(OPERATOR.allows(host, port)).isEqualTo(allowed);
    }

    @Test
    void aNameIsNeverItsAddressAndTheVerbatimExemptionIsPerPort() throws Exception {
        EgressPolicy policy = EgressPolicy.parse("localhost:9000, 127.0.0.1:9001");
        assertThat(policy.allows("127.0.0.1", 9000)).isFalse();
        assertThat(policy.listsAddress(InetAddress.getByName("127.0.0.1"), 9001)).isTrue();
        assertThat(policy.listsAddress(InetAddress.getByName("127.0.0.1"), 9000)).isFalse();
        assertThat(OPERATOR.listsAddress(InetAddress.getByName("10.1.200.1"), 3128)).isTrue();
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"", " ", "*", "*.com", "a.*.example.com", "exa mple.com", "-lead.com", "host:0",
        "host:65536", "host:http", "1.2.3", "1.2.3.256", "01.2.3.4", "10.0.0.0/4", "10.0.0.1/8", "[::1", "[host]:443",
        "::1:443:bad:zz", "[::/8]", "host:443:1", "a..b", "http://pypi.org"})
    void aBadEntryIsRefusedNamingItAndTheAcceptedForms(String entry) {
        assertThatThrownBy(() -> EgressPolicy.parse(List.of("pypi.org", entry)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("egress entry '" + entry + "': ")
                .hasMessageContaining("Write HOST[:PORT]");
    }

    @Test
    void aRequestNarrowsWithinTheOperatorsList() {
        EgressPolicy narrowed = OPERATOR.narrow(List.of("pypi.org", "a.example.com", "*.b.example.com:443",
                "10.1.5.0/24:3128", "10.1.5.7:3128"));
        assertThat(narrowed.entries()).containsExactly("pypi.org:443", "a.example.com:443", "*.b.example.com:443",
                "10.1.5.0/24:3128", "10.1.5.7:3128");
        assertThat(narrowed.allows("files.pythonhosted.org", 443)).isFalse();
        assertThat(OPERATOR.narrow(List.of())).isEqualTo(EgressPolicy.none());
    }

    @Test
    void aWiderRequestNamesEveryEntryThatIsNotAllowed() {
        assertThatThrownBy(() -> OPERATOR.narrow(List.of("pypi.org", "pypi.org:80", "evil.test", "*.example.com:8443",
                "example.com", "10.0.0.0/8:3128", "*.com.example.com", "127.0.0.1:9001")))
                .isInstanceOfSatisfying(EgressNotAllowedException.class, e -> assertThat(e.notAllowed())
                        .containsExactly("pypi.org:80", "evil.test:443", "*.example.com:8443", "example.com:443",
                                "10.0.0.0/8:3128", "127.0.0.1:9001"))
                .hasMessageContaining("evil.test:443");
        assertThatThrownBy(() -> EgressPolicy.none().narrow(List.of("pypi.org")))
                .isInstanceOf(EgressNotAllowedException.class);
        assertThatThrownBy(() -> OPERATOR.narrow(List.of("bad host"))).isInstanceOf(IllegalArgumentException.class)
                .isNotInstanceOf(EgressNotAllowedException.class);
    }

    @Test
    void noneAllowsNothing() {
        assertThat(EgressPolicy.none().isNone()).isTrue();
        assertThat(EgressPolicy.parse(" ").isNone()).isTrue();
        assertThat(EgressPolicy.none().allows("pypi.org", 443)).isFalse();
    }
}
