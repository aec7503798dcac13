package dev.crucible.testhost;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The test host itself: a server in it is reached over the veth alone, and the machine is left as it was found. */
class NetnsHostTest {
    @RegisterExtension
    static final NetnsHost HOST = NetnsHost.extension();

    @Test
    void aServerMadeInTheHostIsReachedAtItsAddressAndNotOnThisMachine() throws Exception {
        HttpServer server = HOST.httpServer();
        server.createContext("/", exchange -> {
            byte[] body = ("hello from " + exchange.getLocalAddress().getAddress().getHostAddress())
                    .getBytes(StandardCharsets.US_ASCII);
            exchange.sendResponseHeaders(200, body.length);
            exchange.getResponseBody().write(body);
            exchange.close();
        });
        server.start();
        int port = server.getAddress().getPort();
        assertThat(HOST.host()).startsWith(NetnsHost.RANGE + ".");
        assertThat(HOST.address().getAddress()[3] & 3).as("the second address of its /30").isEqualTo(2);
        assertThat(NetworkInterface.getByInetAddress(HOST.address())).as("not an address of this machine").isNull();

        HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                URI.create("http://" + HOST.host() + ":" + port + "/")).timeout(Duration.ofSeconds(10)).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(r.body()).isEqualTo("hello from " + HOST.host());
        assertThatThrownBy(() -> SocketChannel.open(new InetSocketAddress(InetAddress.getLoopbackAddress(), port)))
                .as("the host's listener is not on this machine's loopback").isInstanceOf(ConnectException.class);
    }

    @Test
    void aHostAddsOnlyItsVethRouteAndTakesEverythingAwayWhenClosed() throws Exception {
        String first = HOST.host(); // made before the machine's routes are taken
        Set<String> routes = routes();
        NetnsHost other = NetnsHost.open();
        String name = other.name();
        String veth;
        try {
            assertThat(other.host()).isNotEqualTo(first);
            Set<String> added = routes();
            added.removeAll(routes);
            int network = other.address().getAddress()[3] & 0xfc;
            List<String> main = added.stream().filter(r -> !r.startsWith("local ") && !r.startsWith("broadcast "))
                    .toList();
            assertThat(main).as("one connected route in the main table").singleElement().asString()
                    .startsWith(other.host().substring(0, other.host().lastIndexOf('.') + 1) + network + "/30 dev cth"
                            + ProcessHandle.current().pid() + "h");
            veth = main.getFirst().split(" ")[2];
            assertThat(added).as("the kernel's routes of the veth's address, nothing else")
                    .allSatisfy(route -> assertThat(route).contains("dev " + veth + " "));
        } finally {
            other.close();
        }
        assertThat(Path.of("/run/netns", name)).doesNotExist();
        // the kernel removes a namespace's devices a moment after its last user is gone: wait for that state
        await("the veth " + veth + " removed by the kernel").atMost(Duration.ofSeconds(30)).pollDelay(Duration.ZERO)
                .pollInterval(Duration.ofMillis(50))
                .untilAsserted(() -> assertThat(links()).noneMatch(l -> l.startsWith(veth + "@")));
        assertThat(routes()).noneMatch(r -> r.contains("dev " + veth + " "));
        // other test hosts (a class before this one) may have gone meanwhile: the rest of the machine is as it was
        assertThat(withoutTestHosts(routes())).isEqualTo(withoutTestHosts(routes));
    }

    @Test
    void aHostLeftByAJvmThatIsGoneIsRemovedWhenTheNextIsMade() throws Exception {
        Process gone = new ProcessBuilder("true").start();
        gone.waitFor();
        for (int i = 0; i < 100 && ProcessHandle.of(gone.pid()).isPresent(); i++) { // the pid was taken again at once
            gone = new ProcessBuilder("true").start();
            gone.waitFor();
        }
        assertThat(ProcessHandle.of(gone.pid())).as("a pid of a process that is gone").isEmpty();
        String stale = "crucible-th-" + gone.pid() + "-0";
        run(NetnsHost.ip(), "netns", "add", stale);
        try (NetnsHost next = NetnsHost.open()) {
            assertThat(Path.of("/run/netns", stale)).doesNotExist();
            assertThat(next.host()).isNotEqualTo(HOST.host());
        } finally {
            if (Files.exists(Path.of("/run/netns", stale))) {
                run(NetnsHost.ip(), "netns", "del", stale);
            }
        }
    }

    private static Set<String> routes() throws IOException {
        return run(NetnsHost.ip(), "-4", "route", "show", "table", "all").lines().map(String::strip)
                .collect(Collectors.toSet());
    }

    private static Set<String> links() throws IOException {
        return run(NetnsHost.ip(), "-o", "link", "show").lines().map(l -> l.split(":")[1].strip())
                .collect(Collectors.toSet());
    }

    /**
     * The routes that are no test host's: neither on a test host's veth nor of its range (a veth the kernel is
     * tearing down shows as {@code dev if603} for a moment, its name already gone).
     */
    private static Set<String> withoutTestHosts(Set<String> routes) {
        return routes.stream().filter(r -> !r.contains(" dev cth") && !(" " + r).contains(" " + NetnsHost.RANGE + "."))
                .collect(Collectors.toSet());
    }

    private static String run(String... command) throws IOException {
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        try {
            assertThat(process.waitFor()).as(String.join(" ", command) + ": " + out).isZero();
        } catch (InterruptedException e) {
            throw new IOException(e);
        }
        return out;
    }
}
