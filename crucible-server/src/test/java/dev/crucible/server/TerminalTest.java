package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.TestHost;
import java.io.ByteArrayOutputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpResponse;
import java.net.http.WebSocket;
import java.net.http.WebSocketHandshakeException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.assertj.core.api.Assertions;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/**
 * A session's terminal over a WebSocket (issue 27 item 4), against the real server and sandbox, with the JDK's own
 * WebSocket client: a shell that keeps its state, Ctrl-C that reaches the program and not the shell, a resize the
 * program sees, an attach to a running terminal process that replays its output, a hang-up when the socket closes,
 * and the upgrade's checks (token, origin, owner).
 */
class TerminalTest {
    static CrucibleServer server;
    static Http alice;
    static Http bob;

    @BeforeAll
    static void start() {
        ServerConfig config = Http.config();
        server = CrucibleServer.start(config.withPort(0).withTokens(Set.of("token-alice", "token-bob"))
                .withPool(Map.of()), TestHost.crucible());
        alice = Http.to(server, "token-alice");
        bob = Http.to(server, "token-bob");
    }

    @AfterAll
    static void stop() {
        server.close();
    }

    /** A WebSocket's binary frames gathered as text, and its close. */
    static final class Screen implements WebSocket.Listener {
        private final ByteArrayOutputStream seen = new ByteArrayOutputStream();
        final CompletableFuture<String> closed = new CompletableFuture<>();

        @Override
        public synchronized CompletionStage<?> onBinary(WebSocket socket, ByteBuffer data, boolean last) {
            byte[] bytes = new byte[data.remaining()];
            data.get(bytes);
            seen.writeBytes(bytes);
            notifyAll();
            socket.request(1);
            return null;
        }

        @Override
        public CompletionStage<?> onClose(WebSocket socket, int status, String reason) {
            closed.complete(status + " " + reason);
            return null;
        }

        @Override
        public void onError(WebSocket socket, Throwable error) {
            closed.completeExceptionally(error);
        }

        synchronized String text() {
            return seen.toString(StandardCharsets.UTF_8);
        }

        /** Waits (up to 30 s) until the screen shows {@code text}. */
        synchronized String await(String text) throws InterruptedException {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (!text().contains(text)) {
                long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
                assertThat(left).as("waiting for %s; the screen: %s", text, text()).isPositive();
                wait(left);
            }
            return text();
        }
    }

    private static WebSocket connect(String token, String query, Screen screen, String origin) {
        WebSocket.Builder builder = HttpClient.newHttpClient().newWebSocketBuilder().connectTimeout(Duration.ofSeconds(10));
        if (token != null) {
            builder.header("Authorization", "Bearer " + token);
        }
        if (origin != null) {
            builder.header("Origin", origin);
        }
        return builder.buildAsync(URI.create("ws://127.0.0.1:" + server.port() + query), screen).join();
    }

    private static String session() throws Exception {
        HttpResponse<String> r = alice.postJson("/v1/sessions", "{\"language\": \"python\"}");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(201);
        return SessionApiTest.json(r).get("id").asString();
    }

    @Test
    void aShellInTheSessionKeepsItsStateTakesCtrlCAndHangsUpWithTheSocket() throws Exception {
        String id = session();
        try {
            Screen screen = new Screen();
            WebSocket socket = connect("token-alice", "/v1/sessions/" + id + "/terminal?rows=30&cols=100", screen,
                    null);
            socket.sendText("cd /tmp; X=6; stty size; tty\n", true).join();
            screen.await("30 100");
            assertThat(screen.await("/dev/pts/")).contains("30 100");
            socket.sendBinary(ByteBuffer.wrap("echo $((X * 7)) $PWD\n".getBytes(StandardCharsets.UTF_8)), true).join();
            screen.await("42 /tmp");
            // Ctrl-C ends the program in the foreground, not the shell
            socket.sendText("sleep 600; echo after-$((1 + 1))\n", true).join();
            awaitRunning(id, "sleep 600"); // the line discipline signals the foreground program: it must be there
            socket.sendText("\u0003", true).join();
            socket.sendText("echo alive $X\n", true).join();
            assertThat(screen.await("alive 6")).doesNotContain("after-2");
            JsonNode shell = SessionApiTest.json(alice.get("/v1/sessions/" + id + "/processes")).get("processes")
                    .get(0);
            assertThat(shell.get("pty").get("cols").asInt()).isEqualTo(100);
            assertThat(shell.get("terminals").asInt()).as("the socket attached to it").isEqualTo(1);
            long pid = shell.get("pid").asLong();
            // a resize: the shell's next stty sees it
            assertThat(SessionApiTest.json(alice.postJson("/v1/sessions/" + id + "/processes/" + pid + "/resize",
                    "{\"rows\": 50, \"cols\": 132}")).get("resized").asBoolean()).isTrue();
            socket.sendText("stty size\n", true).join();
            screen.await("50 132");
            // closing the socket hangs the shell up
            socket.sendClose(WebSocket.NORMAL_CLOSURE, "bye").join();
            JsonNode ended = SessionApiTest.json(alice.get("/v1/sessions/" + id + "/processes/" + pid
                    + "/output?wait_ms=10000&from=" + Long.MAX_VALUE));
            for (int turns = 0; turns < 6 && ended.get("process").get("running").asBoolean(); turns++) {
                ended = SessionApiTest.json(alice.get("/v1/sessions/" + id + "/processes/" + pid
                        + "/output?wait_ms=10000&from=" + Long.MAX_VALUE));
            }
            assertThat(ended.get("process").get("running").asBoolean()).isFalse();
            assertThat(ended.get("process").get("signal").asInt()).isEqualTo(1);
        } finally {
            alice.delete("/v1/sessions/" + id);
        }
    }

    @Test
    void aTerminalAttachesToARunningPtyProcessAndEndsWithIt() throws Exception {
        String id = session();
        try {
            JsonNode started = SessionApiTest.json(alice.postJson("/v1/sessions/" + id + "/commands",
                    "{\"command\": \"echo before; read line; echo \\\"got $line\\\"\", \"background\": true,"
                            + " \"stdin_open\": true, \"pty\": {\"rows\": 24, \"cols\": 80}}"));
            long pid = started.get("pid").asLong();
            Screen screen = new Screen();
            WebSocket socket = connect("token-alice", "/v1/sessions/" + id + "/terminal?pid=" + pid, screen, null);
            screen.await("before"); // replayed from the ring
            socket.sendText("typed\r", true).join();
            screen.await("got typed");
            assertThat(screen.closed.get(30, TimeUnit.SECONDS)).isEqualTo("1000 exit 0");
            HttpResponse<String> onPipes = alice.postJson("/v1/sessions/" + id + "/commands",
                    "{\"argv\": [\"sleep\", \"600\"], \"background\": true}");
            long sleeper = SessionApiTest.json(onPipes).get("pid").asLong();
            Screen refused = new Screen();
            connect("token-alice", "/v1/sessions/" + id + "/terminal?pid=" + sleeper, refused, null);
            assertThat(refused.closed.get(30, TimeUnit.SECONDS)).startsWith("1008 invalid_request");
        } finally {
            alice.delete("/v1/sessions/" + id);
        }
    }

    @Test
    void theUpgradeIsCheckedAsEveryRouteIs() throws Exception {
        String id = session();
        try {
            String path = "/v1/sessions/" + id + "/terminal";
            assertThat(handshakeStatus(null, path, null)).isEqualTo(401);
            assertThat(handshakeStatus("token-bob", path, null)).isEqualTo(404);
            assertThat(handshakeStatus("token-alice", path, "https://evil.example")).isEqualTo(403);
            assertThat(handshakeStatus("token-alice", "/v1/sessions/" + "0".repeat(32) + "/terminal", null))
                    .isEqualTo(404);
            HttpResponse<String> plain = alice.get(path);
            assertThat(plain.statusCode()).isEqualTo(400);
            assertThat(SessionApiTest.error(plain)).isEqualTo("invalid_request");
            assertThat(bob.get(path).statusCode()).isEqualTo(404);
        } finally {
            alice.delete("/v1/sessions/" + id);
        }
    }

    /** What a browser's WebSocket does: no header of its own, the token as a subprotocol after the one answered. */
    @Test
    void aBrowserSendsTheTokenAsASubprotocolAndNeverGetsItBack() throws Exception {
        String id = session();
        try {
            String path = "/v1/sessions/" + id + "/terminal";
            Screen screen = new Screen();
            WebSocket socket = browser(path, screen, "crucible.terminal", bearer("token-alice"));
            assertThat(socket.getSubprotocol()).isEqualTo("crucible.terminal");
            socket.sendText("echo sub$((1 + 1))protocol\n", true).join();
            screen.await("sub2protocol");
            socket.sendClose(WebSocket.NORMAL_CLOSURE, "done").join();
            assertThat(browserStatus(path, "crucible.terminal", bearer("token-bob"))).as("another token's").isEqualTo(404);
            assertThat(browserStatus(path, "crucible.terminal", bearer("not-a-token"))).isEqualTo(401);
            assertThat(browserStatus(path, "crucible.terminal", "crucible.bearer.not+base64url!")).isEqualTo(400);
            assertThat(browserStatus(path, bearer("token-alice"), "crucible.terminal"))
                    .as("offered first, the token would be the answer's subprotocol").isEqualTo(400);
            assertThat(browserStatus(path, "crucible.terminal", "another")).isEqualTo(401);
        } finally {
            alice.delete("/v1/sessions/" + id);
        }
    }

    private static String bearer(String token) {
        return "crucible.bearer." + Base64.getUrlEncoder().withoutPadding()
                .encodeToString(token.getBytes(StandardCharsets.UTF_8));
    }

    private static WebSocket browser(String path, Screen screen, String protocol, String... more) {
        return HttpClient.newHttpClient().newWebSocketBuilder().connectTimeout(Duration.ofSeconds(10))
                .header("Origin", "http://127.0.0.1:" + server.port()).subprotocols(protocol, more)
                .buildAsync(URI.create("ws://127.0.0.1:" + server.port() + path), screen).join();
    }

    private static int browserStatus(String path, String protocol, String... more) {
        Throwable failed = Assertions.catchThrowable(() -> browser(path, new Screen(), protocol,
                more));
        assertThat(failed).isInstanceOf(CompletionException.class).cause()
                .isInstanceOf(WebSocketHandshakeException.class);
        return ((WebSocketHandshakeException) failed.getCause()).getResponse().statusCode();
    }

    /** The status the server answered a WebSocket handshake with. */
    private static int handshakeStatus(String token, String path, String origin) {
        Throwable failed = Assertions.catchThrowable(() -> connect(token, path, new Screen(),
                origin));
        assertThat(failed).isInstanceOf(CompletionException.class).cause()
                .isInstanceOf(WebSocketHandshakeException.class);
        return ((WebSocketHandshakeException) failed.getCause()).getResponse().statusCode();
    }

    /** Waits (up to 30 s) until a program with this command line runs in the session. */
    private static void awaitRunning(String id, String cmdline) throws Exception {
        for (int turns = 0; turns < 300; turns++) {
            JsonNode ps = SessionApiTest.json(alice.postJson("/v1/sessions/" + id + "/commands",
                    "{\"command\": \"cat /proc/[0-9]*/cmdline | tr '\\\\0' ' '\"}"));
            if (ps.get("stdout").asString().contains(cmdline)) {
                return;
            }
            Thread.onSpinWait();
        }
        throw new AssertionError(cmdline + " did not start in the session");
    }
}
