package dev.crucible.egress;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.InetAddress;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/** The allowlist as an operator writes it, as a request narrows it, and the address table it leans on. */
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

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"::ffff:0:0/96", "2001:db8::1", "::1", "::", "1::", "fd00:ec2::254", "1:0:0:2::3",
        "1:2:3:4:5:6:7:8", "64:ff9b::/96", "10.0.0.0/8"})
    void rangesAreWrittenInTheirConventionalForm(String range) {
        assertThat(Cidr.parse(range).toString()).isEqualTo(range);
    }

    @ParameterizedTest(name = "{0} is {1}")
    @CsvSource({
        "127.0.0.1, LOOPBACK", "127.255.0.9, LOOPBACK", "::1, LOOPBACK", "0.0.0.0, UNSPECIFIED", "::, UNSPECIFIED",
        "0.1.2.3, THIS_NETWORK", "10.9.9.9, PRIVATE", "172.16.0.1, PRIVATE", "172.31.255.255, PRIVATE",
        "172.32.0.1, PUBLIC", "192.168.1.1, PRIVATE", "100.64.0.1, SHARED", "100.127.255.255, SHARED",
        "100.128.0.1, PUBLIC", "169.254.1.1, LINK_LOCAL", "169.254.169.254, METADATA", "fd00:ec2::254, METADATA",
        "100.100.100.200, METADATA", "168.63.129.16, METADATA", "fe80::1, LINK_LOCAL", "febf::1, LINK_LOCAL",
        "fc00::1, UNIQUE_LOCAL", "fd12:3456::1, UNIQUE_LOCAL", "224.0.0.1, MULTICAST", "ff02::1, MULTICAST",
        "255.255.255.255, BROADCAST", "240.0.0.1, RESERVED", "198.18.0.1, BENCHMARK", "198.19.255.1, BENCHMARK",
        "192.0.2.1, DOCUMENTATION", "2001:db8::1, DOCUMENTATION", "::ffff:127.0.0.1, LOOPBACK",
        "::ffff:169.254.169.254, METADATA", "::ffff:8.8.8.8, PUBLIC", "64:ff9b::a00:1, PRIVATE",
        "64:ff9b::808:808, PUBLIC", "2002:7f00:1::, LOOPBACK", "2002:a9fe:a9fe::1, METADATA", "2002:808:808::1, PUBLIC",
        "2001:0:4136:e378:8000:63bf:80ff:fffe, LOOPBACK", "2001:0:7f00:1::1, LOOPBACK",
        "::127.0.0.1, RESERVED", "8.8.8.8, PUBLIC", "151.101.0.223, PUBLIC", "2a04:4e42::223, PUBLIC"})
    void addressesAreClassifiedByTheTable(String address, AddressClass expected) {
        assertThat(AddressRules.classify(HostSyntax.literal(address))).isEqualTo(expected);
    }
}
