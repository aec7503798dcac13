package dev.crucible.egress.proxy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;
import static org.awaitility.Awaitility.await;

import com.sun.net.httpserver.HttpServer;
import dev.crucible.egress.address.AddressClass;
import dev.crucible.egress.policy.EgressPolicy;
import dev.crucible.egress.policy.EgressReason;
import dev.crucible.testhost.NetnsHost;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Predicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The egress proxy against a real loopback origin, with curl as the client (and a Java client over the unix socket).
 * The origin is on 127.0.0.1: it is reached only where the test policy lists {@code 127.0.0.1:PORT} verbatim. A private
 * origin, on a {@link NetnsHost}, is reached the same way: only at its address listed verbatim.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES) // a relay that never ends fails here rather than holding the build
class EgressProxyTest {
    @RegisterExtension
    static final NetnsHost HOST = NetnsHost.extension();
    private static final int BIG = 4 * 1024 * 1024;
    private static HttpServer origin;
    private static int port;
    private static final List<String> seen = new CopyOnWriteArrayList<>();

    private final List<EgressProxy> proxies = new ArrayList<>();

    /** Names as a fixed table: how a hostile DNS answer is staged. */
    private static final EgressResolver RESOLVER = host -> {
        List<InetAddress> addresses = switch (host) {
            case "origin.test", "sneaky.test" -> List.of(InetAddress.getByName("127.0.0.1"));
            case "metadata.test" -> List.of(InetAddress.getByName("169.254.169.254"));
            case "mixed.test" -> List.of(InetAddress.getByName("1.1.1.1"), InetAddress.getByName("127.0.0.1"));
            case "private.test" -> List.of(HOST.address());
            default -> throw new UnknownHostException(host);
        };
        return addresses;
    };

    @BeforeAll
    static void startOrigin() throws IOException {
        origin = TestOrigin.loopback(exchange -> {
            seen.add(exchange.getRequestMethod() + " " + exchange.getRequestURI() + " host="
                    + exchange.getRequestHeaders().getFirst("Host"));
            return exchange.getRequestURI().getPath().equals("/big") ? new byte[BIG]
                    : "hello from the origin\n".getBytes(StandardCharsets.US_ASCII);
        });
        port = origin.getAddress().getPort();
    }

    @AfterAll
    static void stopOrigin() {
        origin.stop(0);
    }

    @AfterEach
    void closeProxies() {
        proxies.forEach(EgressProxy::close);
        seen.clear();
    }

    private EgressProxy proxy(String policy, EgressLimits limits) {
        EgressProxy proxy = EgressProxy.create(EgressPolicy.parse(policy.replace("PORT", String.valueOf(port))),
                RESOLVER, limits, InstantSource.system());
        proxies.add(proxy);
        return proxy;
    }

    private EgressProxy proxy(String policy) {
        return proxy(policy, EgressLimits.defaults());
    }

    private record Curl(int exit, String out, String err) {}

    /** curl through {@code proxy}'s loopback listener; {@code -p} tunnels plain HTTP through CONNECT. */
    private static Curl curl(InetSocketAddress proxy, String url, String... options) throws Exception {
        List<String> command = new ArrayList<>(List.of("curl", "-sS", "-v", "--max-time", "30", "-o", "-",
                "--proxy", "http://127.0.0.1:" + proxy.getPort()));
        command.addAll(List.of(options));
        command.add(url.replace("PORT", String.valueOf(port)));
        ProcessBuilder builder = new ProcessBuilder(command);
        Map<String, String> env = builder.environment();
        env.keySet().removeIf(name -> name.toLowerCase(Locale.ROOT).endsWith("_proxy"));
        Process process = builder.start();
        byte[] out = process.getInputStream().readAllBytes();
        String err = new String(process.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(process.waitFor(60, TimeUnit.SECONDS)).isTrue();
        return new Curl(process.exitValue(), new String(out, StandardCharsets.ISO_8859_1), err);
    }

    static EgressDecision awaitDecision(EgressProxy proxy, Predicate<EgressDecision> which)
            throws InterruptedException {
        // the decision is recorded when the connection ends, just after curl's exit
        List<EgressDecision> decisions = await("the proxy's decision on the connection").atMost(Duration.ofSeconds(10))
                .pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(10))
                .until(proxy::decisions, seen -> seen.stream().anyMatch(which));
        return decisions.stream().filter(which).findFirst().orElseThrow();
    }

    private static EgressDecision onlyDecision(EgressProxy proxy) throws InterruptedException {
        EgressDecision decision = awaitDecision(proxy, d -> true);
        assertThat(proxy.decisions()).hasSize(1);
        return decision;
    }

    /** curl's verbose output shows the proxy's status line; the body (forward requests) shows the reason too. */
    private static void assertRefused(Curl curl, int status, String reason) {
        assertThat(curl.err()).contains("< HTTP/1.1 " + status + " crucible egress refused");
        assertThat(curl.err() + curl.out()).contains(reason);
    }

    @Test
    void aForwardGetReachesTheOriginListedVerbatimInOriginForm() throws Exception {
        EgressProxy proxy = proxy("127.0.0.1:PORT");
        Curl curl = curl(proxy.listenLoopback(), "http://127.0.0.1:PORT/hello?x=1");
        assertThat(curl.exit()).isZero();
        assertThat(curl.out()).isEqualTo("hello from the origin\n");
        assertThat(seen).containsExactly("GET /hello?x=1 host=127.0.0.1:" + port);
        EgressDecision decision = onlyDecision(proxy);
        assertThat(decision.reason()).isEqualTo(EgressReason.ALLOWED);
        assertThat(decision.ending()).isEqualTo(EgressEnding.CLOSED);
        assertThat(decision.addressClass()).isEqualTo(AddressClass.LOOPBACK);
        assertThat(decision.bytesSent()).isPositive();
        assertThat(decision.bytesReceived()).isGreaterThan(22);
        assertThat(proxy.counters().allowed()).isEqualTo(1);
    }

    @Test
    void aConnectTunnelCarriesHttpToTheOriginThroughAListedNameAndVerbatimAddress() throws Exception {
        EgressProxy proxy = proxy("origin.test:PORT, 127.0.0.1:PORT");
        Curl curl = curl(proxy.listenLoopback(), "http://origin.test:PORT/hello", "--proxytunnel");
        assertThat(curl.exit()).isZero();
        assertThat(curl.err()).contains("< HTTP/1.1 200 Connection established");
        assertThat(curl.out()).isEqualTo("hello from the origin\n");
        EgressDecision decision = onlyDecision(proxy);
        assertThat(decision.method()).isEqualTo("CONNECT");
        assertThat(decision.host()).isEqualTo("origin.test");
        assertThat(decision.address().getHostAddress()).isEqualTo("127.0.0.1");
    }

    @Test
    void aHostNotOnTheListIsRefused() throws Exception {
        EgressProxy proxy = proxy("origin.test:PORT");
        Curl curl = curl(proxy.listenLoopback(), "http://evil.test:PORT/");
        assertRefused(curl, 403, "evil.test:" + port + ": the host is not on this sandbox's egress allowlist");
        assertThat(onlyDecision(proxy).reason()).isEqualTo(EgressReason.NOT_LISTED);
    }

    @Test
    void aConnectToAnUnlistedHostIsRefusedBeforeAnyByteMoves() throws Exception {
        EgressProxy proxy = proxy("origin.test:PORT, 127.0.0.1:PORT");
        Curl https = curl(proxy.listenLoopback(), "https://evil.test/");
        assertThat(https.exit()).isEqualTo(56);
        assertRefused(https, 403, "evil.test:443: the host is not on this sandbox's egress allowlist");
        Curl tunnel = curl(proxy.listenLoopback(), "http://evil.test:PORT/hello", "--proxytunnel");
        assertRefused(tunnel, 403, "not on this sandbox's egress allowlist");
        assertThat(seen).isEmpty();
        assertThat(proxy.decisions()).extracting(EgressDecision::method, EgressDecision::reason).containsExactly(
                tuple("CONNECT", EgressReason.NOT_LISTED),
                tuple("CONNECT", EgressReason.NOT_LISTED));
    }

    @Test
    void anAllowedNameOnAnotherPortIsRefused() throws Exception {
        EgressProxy proxy = proxy("origin.test:PORT, 127.0.0.1:PORT");
        Curl curl = curl(proxy.listenLoopback(), "http://origin.test:" + (port == 1 ? 2 : port - 1) + "/");
        assertRefused(curl, 403, "the host is on this sandbox's egress allowlist, but not on this port");
        assertThat(onlyDecision(proxy).reason()).isEqualTo(EgressReason.PORT_NOT_LISTED);
    }

    @Test
    void loopbackOnAPortNotListedIsRefused() throws Exception {
        EgressProxy proxy = proxy("127.0.0.1:PORT");
        InetSocketAddress listener = proxy.listenLoopback();
        Curl curl = curl(listener, "http://127.0.0.1:" + listener.getPort() + "/");
        assertRefused(curl, 403, "but not on this port");
        assertRefused(curl(listener, "http://[::1]:PORT/"), 403, "not on this sandbox's egress allowlist");
        assertRefused(curl(listener, "http://localhost:PORT/"), 403, "not on this sandbox's egress allowlist");
        assertThat(seen).isEmpty();
    }

    @Test
    void aPrivateAddressIsRefusedUnlistedAndBehindAListedNameAndReachedOnlyWhenListedVerbatim() throws Exception {
        HttpServer privateOrigin = TestOrigin.on(HOST, exchange -> "hello from the private origin\n"
                .getBytes(StandardCharsets.US_ASCII));
        String at = HOST.host() + ":" + privateOrigin.getAddress().getPort();
        String named = "private.test:" + privateOrigin.getAddress().getPort();
        EgressProxy proxy = proxy(named);
        InetSocketAddress listener = proxy.listenLoopback();
        assertRefused(curl(listener, "http://" + at + "/"), 403, "not on this sandbox's");
        assertRefused(curl(listener, "http://" + named + "/"), 403, "resolves to an address the sandbox may not reach ("
                + HOST.host() + " is private)");
        assertThat(proxy.decisions()).extracting(EgressDecision::reason)
                .containsExactly(EgressReason.NOT_LISTED, EgressReason.FORBIDDEN_ADDRESS);

        EgressProxy listed = proxy(named + ", " + at);
        Curl reached = curl(listed.listenLoopback(), "http://" + named + "/");
        assertThat(reached.out()).isEqualTo("hello from the private origin\n");
        assertThat(onlyDecision(listed).addressClass()).isEqualTo(AddressClass.PRIVATE);
    }

    @Test
    void theMetadataAddressIsRefusedAsAnAddressAndBehindAListedName() throws Exception {
        EgressProxy proxy = proxy("metadata.test:80");
        InetSocketAddress listener = proxy.listenLoopback();
        assertRefused(curl(listener, "http://169.254.169.254/latest/meta-data/"), 403, "not on this sandbox's");
        assertRefused(curl(listener, "http://metadata.test/latest/meta-data/"), 403, "(169.254.169.254 is metadata)");
        EgressDecision named = proxy.decisions().getLast();
        assertThat(named.reason()).isEqualTo(EgressReason.FORBIDDEN_ADDRESS);
        assertThat(named.addressClass()).isEqualTo(AddressClass.METADATA);
    }

    @Test
    void aListedNameThatResolvesToLoopbackIsRefusedOverForwardAndConnect() throws Exception {
        EgressProxy proxy = proxy("sneaky.test:PORT, mixed.test:PORT");
        InetSocketAddress listener = proxy.listenLoopback();
        assertRefused(curl(listener, "http://sneaky.test:PORT/hello"), 403, "(127.0.0.1 is loopback)");
        assertRefused(curl(listener, "http://sneaky.test:PORT/hello", "--proxytunnel"), 403, "(127.0.0.1 is loopback)");
        assertRefused(curl(listener, "http://mixed.test:PORT/hello"), 403, "(127.0.0.1 is loopback)");
        assertThat(seen).isEmpty();
        assertThat(proxy.counters().byReason().get(EgressReason.FORBIDDEN_ADDRESS)).isEqualTo(3);
    }

    @Test
    void anAllowedNameOnAPrivateAddressIsReachedOnlyWhenTheAddressIsListedVerbatim() throws Exception {
        Curl refused = curl(proxy("origin.test:PORT").listenLoopback(), "http://origin.test:PORT/hello");
        assertRefused(refused, 403, "(127.0.0.1 is loopback)");
        Curl allowed = curl(proxy("origin.test:PORT, 127.0.0.1:PORT").listenLoopback(), "http://origin.test:PORT/hello");
        assertThat(allowed.out()).isEqualTo("hello from the origin\n");
        assertThat(seen).containsExactly("GET /hello host=origin.test:" + port);
    }

    @Test
    void theByteCapCutsALargeDownloadAndRefusesWhatFollows() throws Exception {
        EgressProxy proxy = proxy("127.0.0.1:PORT", EgressLimits.defaults().withMaxBytes(1024 * 1024));
        InetSocketAddress listener = proxy.listenLoopback();
        Curl cut = curl(listener, "http://127.0.0.1:PORT/big");
        assertThat(cut.exit()).isNotZero();
        assertThat(cut.out().length()).isLessThan(1024 * 1024);
        EgressDecision decision = awaitDecision(proxy, d -> d.allowed());
        assertThat(decision.ending()).isEqualTo(EgressEnding.BYTE_CAP);
        assertThat(decision.bytesSent() + decision.bytesReceived()).isEqualTo(1024 * 1024);
        assertRefused(curl(listener, "http://127.0.0.1:PORT/hello"), 403, "egress byte budget is spent");
    }

    @Test
    void theConnectionCapAnswers429UntilAConnectionCloses() throws Exception {
        EgressProxy proxy = proxy("127.0.0.1:PORT", EgressLimits.defaults().withMaxConnections(1));
        InetSocketAddress listener = proxy.listenLoopback();
        try (SocketChannel held = SocketChannel.open(listener)) {
            assertThat(request(held, "CONNECT 127.0.0.1:" + port + " HTTP/1.1\r\nHost: x\r\n\r\n"))
                    .isEqualTo("HTTP/1.1 200 Connection established\r\n\r\n");
            assertRefused(curl(listener, "http://127.0.0.1:PORT/hello"), 429, "as many egress connections open");
        }
        awaitDecision(proxy, d -> d.allowed());
        // the tunnel's thread ends just after it records its decision
        await("the tunnel closed: no connection open").atMost(Duration.ofSeconds(10)).pollDelay(Duration.ZERO)
                .pollInterval(Duration.ofMillis(10)).until(() -> proxy.counters().open(), open -> open == 0);
        assertThat(curl(listener, "http://127.0.0.1:PORT/hello").out()).isEqualTo("hello from the origin\n");
    }

    @Test
    void theUnixSocketSpeaksConnectAndRefusesUnlistedHosts(@TempDir Path dir) throws Exception {
        EgressProxy proxy = proxy("127.0.0.1:PORT");
        Path socket = dir.resolve("egress.sock");
        proxy.listen(socket);
        try (SocketChannel tunnel = SocketChannel.open(StandardProtocolFamily.UNIX)) {
            tunnel.connect(UnixDomainSocketAddress.of(socket));
            assertThat(request(tunnel, "CONNECT 127.0.0.1:" + port + " HTTP/1.1\r\nHost: x\r\n\r\n"))
                    .isEqualTo("HTTP/1.1 200 Connection established\r\n\r\n");
            String response = request(tunnel, "GET /hello HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
            assertThat(response).startsWith("HTTP/1.1 200").endsWith("hello from the origin\n");
        }
        try (SocketChannel refused = SocketChannel.open(StandardProtocolFamily.UNIX)) {
            refused.connect(UnixDomainSocketAddress.of(socket));
            assertThat(request(refused, "CONNECT evil.test:443 HTTP/1.1\r\n\r\n")).startsWith(
                    "HTTP/1.1 403 crucible egress refused evil.test:443: the host is not on this sandbox's egress"
                            + " allowlist\r\n").contains("X-Crucible-Egress: not_listed");
        }
        proxy.close();
        assertThat(socket).doesNotExist();
    }

    @Test
    void whatIsNotAProxyRequestIsAnswered400Or431() throws Exception {
        InetSocketAddress listener = proxy("127.0.0.1:PORT").listenLoopback();
        for (String bad : List.of("GET /hello HTTP/1.1\r\n\r\n", "CONNECT 127.1:" + port + " HTTP/1.1\r\n\r\n",
                "CONNECT 127.0.0.1 HTTP/1.1\r\n\r\n", "GET https://127.0.0.1:" + port + "/ HTTP/1.1\r\n\r\n",
                "GET http://u@127.0.0.1:" + port + "/ HTTP/1.1\r\n\r\n", "GET http://x/ HTTP/1.1\r\n folded\r\n\r\n",
                "GET http://x/\u00e9 HTTP/1.1\r\n\r\n")) {
            try (SocketChannel client = SocketChannel.open(listener)) {
                assertThat(request(client, bad)).as(bad).startsWith("HTTP/1.1 400 crucible egress refused");
            }
        }
        try (SocketChannel client = SocketChannel.open(listener)) {
            assertThat(request(client, "GET http://127.0.0.1:" + port + "/ HTTP/1.1\r\nX: " + "a".repeat(20_000)
                    + "\r\n\r\n")).startsWith("HTTP/1.1 431 ");
        }
        assertThat(seen).isEmpty();
    }

    @Test
    void anIdleTunnelIsClosed() throws Exception {
        EgressProxy proxy = proxy("127.0.0.1:PORT", EgressLimits.defaults().withIdleTimeout(Duration.ofMillis(200)));
        try (SocketChannel tunnel = SocketChannel.open(proxy.listenLoopback())) {
            request(tunnel, "CONNECT 127.0.0.1:" + port + " HTTP/1.1\r\n\r\n");
            assertThat(tunnel.read(ByteBuffer.allocate(16))).isEqualTo(-1);
        }
        assertThat(awaitDecision(proxy, d -> d.allowed()).ending()).isEqualTo(EgressEnding.IDLE_TIMEOUT);
    }

    /**
     * A tunnel whose client stopped reading an endless answer holds the relay in a write (a splice that holds
     * descriptors of its own, which closing the channels alone leaves open): closing the proxy still ends it, the
     * client's stream ends and the tunnel's threads are gone.
     */
    @Test
    void closingTheProxyEndsATunnelBlockedWritingToAClientThatStoppedReading() throws Exception {
        AtomicLong written = new AtomicLong();
        try (ServerSocketChannel endless = ServerSocketChannel.open()) {
            endless.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            Thread.ofVirtual().start(() -> {
                try (SocketChannel answer = endless.accept()) {
                    ByteBuffer zeros = ByteBuffer.allocate(64 * 1024);
                    while (true) {
                        written.addAndGet(answer.write(zeros.clear()));
                    }
                } catch (IOException e) {
                    // the proxy closed its side: the test goes on
                }
            });
            int endlessPort = ((InetSocketAddress) endless.getLocalAddress()).getPort();
            EgressProxy proxy = proxy("127.0.0.1:" + endlessPort);
            try (SocketChannel tunnel = SocketChannel.open(proxy.listenLoopback())) {
                request(tunnel, "CONNECT 127.0.0.1:" + endlessPort + " HTTP/1.1\r\n\r\n");
                ByteBuffer some = ByteBuffer.allocate(1 << 20);
                while (some.hasRemaining() && tunnel.read(some) >= 0) {
                    // the first MiB: the relay is moving bytes
                }
                long[] last = {-1};
                await("every buffer on the way is full: the relay waits to write").atMost(Duration.ofSeconds(20))
                        .pollInterval(Duration.ofMillis(200)).until(() -> {
                            long now = written.get();
                            boolean still = now == last[0];
                            last[0] = now;
                            return still;
                        });
                proxy.close();
                tunnel.socket().setSoTimeout(10_000); // a read that hangs fails the test
                InputStream in = tunnel.socket().getInputStream();
                long after = 0;
                for (int n; (n = in.read(some.array())) >= 0;) {
                    after += n;
                    assertThat(after).as("the stream ended with the proxy").isLessThan(256L << 20);
                }
            } catch (SocketException e) {
                // a reset also ends the stream
            }
            await("the tunnel's threads ended").atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(10))
                    .until(() -> proxy.counters().open(), open -> open == 0);
            await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(10)).until(() -> Thread
                    .getAllStackTraces().keySet().stream().noneMatch(t -> t.getName().equals("crucible-egress-up")));
        }
    }

    /**
     * Decisions are listed in the order they were judged: a tunnel opened first and still open (recorded only when it
     * ends) comes before a refusal judged while it was open.
     */
    @Test
    void decisionsAreListedInTheOrderTheyWereJudged() throws Exception {
        EgressProxy proxy = proxy("127.0.0.1:PORT");
        try (SocketChannel tunnel = SocketChannel.open(proxy.listenLoopback())) {
            assertThat(request(tunnel, "CONNECT 127.0.0.1:" + port + " HTTP/1.1\r\n\r\n")).startsWith("HTTP/1.1 200");
            try (SocketChannel refused = SocketChannel.open(proxy.listenLoopback())) {
                assertThat(request(refused, "CONNECT evil.test:443 HTTP/1.1\r\n\r\n")).contains("crucible egress refused");
            }
            awaitDecision(proxy, d -> !d.allowed());
        }
        awaitDecision(proxy, EgressDecision::allowed);
        assertThat(proxy.decisions()).extracting(EgressDecision::allowed).containsExactly(true, false);
    }

    /**
     * Writes {@code request}, then reads one response: the head alone for a 200 to CONNECT, otherwise up to the
     * Content-Length body, or to the end of the stream.
     */
    private static String request(SocketChannel channel, String request) throws IOException {
        channel.write(ByteBuffer.wrap(request.getBytes(StandardCharsets.ISO_8859_1)));
        StringBuilder text = new StringBuilder();
        ByteBuffer one = ByteBuffer.allocate(1);
        int headEnd = -1;
        long length = -1;
        while (true) {
            one.clear();
            if (channel.read(one) < 0) {
                return text.toString();
            }
            text.append((char) (one.get(0) & 0xff));
            if (headEnd < 0 && text.toString().endsWith("\r\n\r\n")) {
                headEnd = text.length();
                if (request.startsWith("CONNECT") && text.toString().startsWith("HTTP/1.1 200")) {
                    return text.toString();
                }
                Matcher matcher = Pattern.compile("(?i)content-length: *([0-9]+)").matcher(text);
                length = matcher.find() ? Long.parseLong(matcher.group(1)) : -1;
            }
            if (headEnd >= 0 && length >= 0 && text.length() - headEnd == length) {
                return text.toString();
            }
        }
    }
}
