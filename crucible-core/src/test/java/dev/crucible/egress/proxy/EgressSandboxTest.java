package dev.crucible.egress.proxy;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import dev.crucible.TestHost;
import dev.crucible.egress.StalledOrigin;
import dev.crucible.egress.policy.EgressPolicy;
import dev.crucible.egress.policy.EgressReason;
import dev.crucible.sandbox.Limits;
import dev.crucible.sandbox.Sandbox;
import dev.crucible.sandbox.SandboxResult;
import dev.crucible.sandbox.SandboxSpec;
import dev.crucible.sandbox.Verdict;
import dev.crucible.testhost.Capability;
import dev.crucible.testhost.NetnsHost;
import java.io.IOException;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Egress from a real sandbox: the program reaches the proxy on its own {@code 127.0.0.1:3128} (through the variables
 * the launch sets), and nothing else. The origin is a real HTTP server on the host's loopback, reachable only where a
 * test policy lists {@code 127.0.0.1:PORT} verbatim; names are a fixed table ({@link EgressResolver}), which is how a
 * hostile DNS answer is staged. Origins on a private address ({@link NetnsHost}) stand for the machine's network:
 * reachable from the host, never from the sandbox.
 */
class EgressSandboxTest {
    private static final String PYTHON = "/usr/bin/python3";
    @RegisterExtension
    static final NetnsHost HOST = NetnsHost.extension();
    private static HttpServer origin;
    private static int port;
    private final List<EgressProxy> proxies = new ArrayList<>();

    private static final EgressResolver RESOLVER = host -> switch (host) {
        case "origin.test", "sneaky.test" -> List.of(InetAddress.getByName("127.0.0.1"));
        case "metadata.test" -> List.of(InetAddress.getByName("169.254.169.254"));
        default -> throw new UnknownHostException(host);
    };

    @BeforeAll
    static void startOrigin() throws IOException {
        origin = TestOrigin.loopback(
                exchange -> ("hello " + exchange.getRequestURI().getPath() + "\n").getBytes(StandardCharsets.US_ASCII));
        port = origin.getAddress().getPort();
    }

    /** An origin on the test host's private address; its {@code HOST:PORT}. */
    private static String privateOrigin() throws IOException {
        HttpServer server = TestOrigin.on(HOST, exchange -> "private\n".getBytes(StandardCharsets.US_ASCII));
        return HOST.host() + ":" + server.getAddress().getPort();
    }

    @AfterAll
    static void stopOrigin() {
        origin.stop(0);
    }

    @AfterEach
    void closeProxies() throws Exception {
        proxies.forEach(EgressProxy::close);
        TestHost.assertNothingLeft();
    }

    private static Sandbox sandbox() {
        Sandbox sandbox = TestHost.crucible().sandbox();
        Capability.EGRESS.require(sandbox.egressUnavailable());
        return sandbox;
    }

    private EgressProxy proxy(String policy) {
        EgressProxy proxy = EgressProxy.create(EgressPolicy.parse(policy.replace("PORT", String.valueOf(port))),
                RESOLVER, EgressLimits.defaults(), InstantSource.system());
        proxies.add(proxy);
        return proxy;
    }

    private static SandboxResult python(EgressProxy proxy, String program) throws InterruptedException {
        SandboxSpec spec = SandboxSpec.of(List.of(PYTHON, "-c", program.replace("PORT", String.valueOf(port))),
                Limits.DEFAULT).withEgress(proxy);
        return sandbox().run(spec);
    }

    private static String out(SandboxResult r) {
        return new String(r.stdout(), StandardCharsets.UTF_8) + new String(r.stderr(), StandardCharsets.UTF_8);
    }

    /** urllib through the proxy variables; prints the body, or the status and the proxy's reason. */
    private static final String FETCH = """
            import sys, urllib.request, urllib.error
            try:
                print(urllib.request.urlopen(sys.argv[1] if len(sys.argv) > 1 else URL, timeout=20).read().decode(), end='')
            except urllib.error.HTTPError as e:
                print('refused', e.code, e.headers.get('X-Crucible-Egress'))
            except Exception as e:
                print('failed', type(e).__name__, e)
            """;

    private static String fetch(EgressProxy proxy, String url) throws InterruptedException {
        SandboxResult r = python(proxy, "URL = '" + url + "'\n" + FETCH);
        assertThat(r.verdict()).as(out(r)).isEqualTo(Verdict.OK);
        return out(r);
    }

    /** A raw {@code CONNECT} from inside, as any TLS client sends it; prints the proxy's status line. */
    private static String connect(EgressProxy proxy, String target) throws InterruptedException {
        SandboxResult r = python(proxy, """
                import socket
                s = socket.create_connection(('127.0.0.1', 3128), timeout=20)
                s.sendall(b'CONNECT TARGET HTTP/1.1\\r\\nHost: TARGET\\r\\n\\r\\n')
                print(s.recv(4096).split(b'\\r\\n')[0].decode())
                """.replace("TARGET", target));
        assertThat(r.verdict()).as(out(r)).isEqualTo(Verdict.OK);
        return out(r);
    }

    @Test
    void aListedOriginIsReachedThroughTheProxyVariables() throws Exception {
        EgressProxy proxy = proxy("origin.test:PORT, 127.0.0.1:PORT");
        assertThat(fetch(proxy, "http://origin.test:PORT/pkg")).isEqualTo("hello /pkg\n");
        assertThat(proxy.decisions()).extracting(EgressDecision::reason).containsExactly(EgressReason.ALLOWED);
        assertThat(proxy.decisions().getFirst().host()).isEqualTo("origin.test");
    }

    @Test
    void aConnectTunnelToAListedOriginIsEstablished() throws Exception {
        EgressProxy proxy = proxy("origin.test:PORT, 127.0.0.1:PORT");
        assertThat(connect(proxy, "origin.test:" + port)).startsWith("HTTP/1.1 200");
    }

    @Test
    void everyUnlistedOrForbiddenTargetIsRefusedWithItsReason() throws Exception {
        EgressProxy proxy = proxy("origin.test:PORT, 127.0.0.1:PORT, sneaky.test:PORT, metadata.test:80");
        String unlisted = privateOrigin();
        assertThat(fetch(proxy, "http://elsewhere.test:PORT/")).startsWith("refused 403 not_listed");
        assertThat(fetch(proxy, "http://origin.test:1/")).startsWith("refused 403 port_not_listed");
        assertThat(connect(proxy, "127.0.0.1:22")).startsWith("HTTP/1.1 403");
        assertThat(connect(proxy, "169.254.169.254:80")).startsWith("HTTP/1.1 403");
        assertThat(fetch(proxy, "http://metadata.test/latest/meta-data/")).startsWith("refused 403 forbidden_address");
        assertThat(connect(proxy, "evil.test:443")).startsWith("HTTP/1.1 403");
        assertThat(connect(proxy, unlisted)).as("a private address not listed").startsWith("HTTP/1.1 403");
        // sneaky.test is listed on the origin's port, but resolves to loopback on a port not listed verbatim
        EgressProxy narrow = proxy("sneaky.test:PORT");
        assertThat(fetch(narrow, "http://sneaky.test:PORT/")).startsWith("refused 403 forbidden_address");
        assertThat(proxy.decisions()).noneMatch(EgressDecision::allowed);
    }

    @Test
    void withoutTheProxyNothingLeavesTheSandbox() throws Exception {
        String reachable = privateOrigin();
        EgressProxy proxy = proxy("origin.test:PORT, 127.0.0.1:PORT, " + reachable);
        SandboxResult r = python(proxy, """
                import socket
                def tcp(host, port):
                    try:
                        socket.create_connection((host, port), timeout=5).close(); return 'connected'
                    except OSError as e:
                        return type(e).__name__ + ' ' + str(e.errno)
                print('tcp-out', tcp('1.1.1.1', 443))
                print('tcp-host-loopback', tcp('127.0.0.1', PORT))
                print('tcp-private', tcp('PRIVATE_HOST', PRIVATE_PORT))
                u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                try:
                    u.sendto(b'x', ('8.8.8.8', 53)); print('udp sent')
                except OSError as e:
                    print('udp', e.errno)
                try:
                    print('dns', socket.getaddrinfo('pypi.org', 443))
                except OSError as e:
                    print('dns failed', type(e).__name__)
                try:
                    socket.socket(socket.AF_PACKET, socket.SOCK_RAW); print('packet socket made')
                except OSError as e:
                    print('packet', e.errno)
                try:
                    socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0); print('netlink socket made')
                except OSError as e:
                    print('netlink', e.errno)
                """.replace("PRIVATE_HOST", HOST.host()).replace("PRIVATE_PORT", reachable.split(":")[1]));
        String out = out(r);
        assertThat(out).contains("tcp-out OSError 101"); // ENETUNREACH: only loopback here
        assertThat(out).contains("tcp-host-loopback ConnectionRefusedError 111"); // the host's loopback is not this one
        assertThat(out).as("listed, but only for the proxy: no route from the sandbox")
                .contains("tcp-private OSError 101");
        assertThat(out).contains("udp 101").contains("dns failed").contains("packet 97").contains("netlink 97");
        assertThat(proxy.decisions()).isEmpty();
    }

    @Test
    void theHostsAbstractSocketsAreNotReachable() throws Exception {
        String name = "crucible-egress-test-" + ProcessHandle.current().pid();
        // abstract unix sockets are scoped by network namespace; the JDK cannot bind one, the host's Python can
        Process host = new ProcessBuilder(PYTHON, "-c", """
                import socket, sys
                s = socket.socket(socket.AF_UNIX); s.bind('\\0' + sys.argv[1]); s.listen(); print('ready', flush=True)
                sys.stdin.read()
                """, name).redirectErrorStream(true).start();
        try {
            assertThat(new String(host.getInputStream().readNBytes(6), StandardCharsets.US_ASCII)).isEqualTo("ready\n");
            SandboxResult r = python(proxy("origin.test:PORT"), """
                    import socket
                    s = socket.socket(socket.AF_UNIX)
                    try:
                        s.connect('\\0NAME'); print('connected')
                    except OSError as e:
                        print('refused', e.errno)
                    """.replace("NAME", name));
            assertThat(out(r)).contains("refused 111");
        } finally {
            host.destroyForcibly().waitFor();
        }
    }

    @Test
    void aSandboxWithoutEgressStillCannotMakeAnInternetSocket() throws Exception {
        SandboxResult r = sandbox().run(SandboxSpec.of(List.of(PYTHON, "-c", """
                import os, socket
                print(os.environ.get('http_proxy'))
                try:
                    socket.socket(socket.AF_INET, socket.SOCK_STREAM); print('made')
                except OSError as e:
                    print('inet', e.errno)
                """), Limits.DEFAULT));
        assertThat(out(r)).contains("None").contains("inet 97");
    }

    /**
     * A run killed at its deadline while its connection to an origin stalls: the proxy (which lives on, as a session's
     * does) lets go of the connection when the sandbox ends, not an idle timeout later.
     */
    @ParameterizedTest
    @EnumSource(StalledOrigin.Stall.class)
    void aSandboxThatEndsWhileItsOriginStallsHasItsConnectionClosed(StalledOrigin.Stall stall) throws Exception {
        try (StalledOrigin stalled = StalledOrigin.start(HOST, stall)) {
            EgressProxy proxy = proxy(stalled.allowEntry());
            SandboxResult r = sandbox().run(SandboxSpec.of(List.of(PYTHON, "-c", stalled.waitingProgram()),
                    Limits.DEFAULT.with(2_000L, null, null, null, null)).withEgress(proxy));
            assertThat(r.verdict()).as(out(r)).isEqualTo(Verdict.TIMEOUT);
            assertThat(out(r)).startsWith("HTTP/1.1 200").doesNotContain("answered");
            assertThat(stalled.stalled()).isEqualTo(1);
            assertThat(stalled.heldAfter(Duration.ofSeconds(10))).as("connections to the origin the proxy still holds")
                    .isZero();
            EgressDecision decision = EgressProxyTest.awaitDecision(proxy, d -> true);
            assertThat(decision.ending()).isEqualTo(EgressEnding.PROXY_CLOSED);
            assertThat(proxy.counters().open()).isZero();
        }
    }

    @Test
    void aLockedProxyRefusesEverythingAfterwards() throws Exception {
        EgressProxy proxy = proxy("origin.test:PORT, 127.0.0.1:PORT");
        proxy.lock();
        assertThat(fetch(proxy, "http://origin.test:PORT/")).startsWith("refused 403 not_listed");
    }
}
