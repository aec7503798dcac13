package dev.crucible.egress.address;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/** The address table the allowlist leans on: ranges in their conventional form, and each address's class. */
class AddressRulesTest {
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
