package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.TestHost;
import dev.crucible.testhost.Capability;
import java.awt.image.BufferedImage;
import java.io.ByteArrayInputStream;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.WebSocket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * A session's desktop through Crucible's own API (issue 54): {@code POST …/desktop} starts Xvfb, XFCE, x11vnc and
 * noVNC inside the session; the scripted agent loop shoots the screen, finds a red window by its pixels, clicks
 * into it, types a command and a key, and reads back the file the command wrote; cursor and screen size come back;
 * noVNC's page is served through the authenticated ports proxy, and its WebSocket bridge answers with the VNC
 * server's greeting through the proxy's upgrade (the live view); bad actions are 400s naming what is wrong.
 */
class DesktopApiTest {
    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static CrucibleServer server;
    private static ServerConfig config;
    private static Http http;
    private static String id;

    @BeforeAll
    static void start() throws Exception {
        config = Http.config().withPort(0).withPool(Map.of());
        server = CrucibleServer.start(config, TestHost.crucible());
        http = Http.to(server, null);
        id = SessionApiTest.json(http.postJson("/v1/sessions",
                "{\"language\": \"python\", \"limits\": {\"memory_mb\": 2048, \"pids\": 1024}}")).get("id").asString();
    }

    @AfterAll
    static void stop() {
        if (server != null) {
            server.close();
        }
    }

    private static void requireDesktop() {
        Capability.DESKTOP.require();
        Capability.SESSION_ROOTS.require(Files.isDirectory(config.sessions().dataDir().resolve("sessions").resolve(id)
                .resolve("disk")) ? null : "this host gives sessions no root of their own (not root, no loop mounts)");
    }

    private static String path(String tail) {
        return "/v1/sessions/" + id + tail;
    }

    private static BufferedImage screenshot() throws Exception {
        HttpResponse<byte[]> r = http.client().send(HttpRequest.newBuilder(URI.create(http.base()
                + path("/desktop/screenshot"))).header("X-Crucible-Request", "1")
                .POST(HttpRequest.BodyPublishers.noBody())
                .timeout(Duration.ofSeconds(60)).build(), HttpResponse.BodyHandlers.ofByteArray());
        assertThat(r.statusCode()).as(new String(r.body())).isEqualTo(200);
        assertThat(r.headers().firstValue("Content-Type")).hasValue("image/png");
        return ImageIO.read(new ByteArrayInputStream(r.body()));
    }

    private static JsonNode act(String actions) throws Exception {
        HttpResponse<String> r = http.postJson(path("/desktop/actions"), "{\"actions\": " + actions + "}");
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        return SessionApiTest.json(r).get("results");
    }

    private static void assertError(HttpResponse<String> r, int status, String code, String words) {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(status);
        assertThat(SessionApiTest.json(r).get("error").get("code").asString()).as(r.body()).isEqualTo(code);
        assertThat(r.body()).contains(words);
    }

    /** Polls {@code probe} until it answers non-null (the display and its windows are another process's). */
    private static <T> T until(String what, Supplier<T> probe) throws InterruptedException {
        long end = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        for (T value; System.nanoTime() < end; Thread.sleep(200)) {
            if ((value = probe.get()) != null) {
                return value;
            }
        }
        throw new AssertionError(what + " did not happen within 60 s");
    }

    /** The bounding box {x0, y0, x1, y1} of the pure red pixels, or null. */
    private static int[] redBox(BufferedImage image) {
        int[] box = null;
        for (int y = 0; y < image.getHeight(); y++) {
            for (int x = 0; x < image.getWidth(); x++) {
                if ((image.getRGB(x, y) & 0xffffff) == 0xff0000) {
                    box = box == null ? new int[] {x, y, x, y} : new int[] {Math.min(box[0], x), Math.min(box[1], y),
                            Math.max(box[2], x), Math.max(box[3], y)};
                }
            }
        }
        return box;
    }

    @Test
    void anAgentLoopSeesClicksAndTypesOnTheSessionsOwnDesktop() throws Exception {
        requireDesktop();
        assertError(http.postJson(path("/desktop/actions"), "{\"actions\": [{\"action\": \"cursor_position\"}]}"),
                404, "not_found", "no desktop running");
        HttpResponse<String> started = http.postJson(path("/desktop"), "{\"width\": 800, \"height\": 600}");
        assertThat(started.statusCode()).as(started.body()).isEqualTo(201);
        assertThat(SessionApiTest.json(started).get("novnc_port").asInt()).isEqualTo(6080);
        assertError(http.postJson(path("/desktop"), "{}"), 400, "invalid_request", "already running");

        BufferedImage first = screenshot();
        assertThat(first.getWidth()).isEqualTo(800);
        assertThat(first.getHeight()).isEqualTo(600);
        HttpResponse<String> xterm = http.postJson(path("/commands"), JSON.writeValueAsString(Map.of("command",
                "xterm -bg '#ff0000' -fg '#ff0000' -geometry 40x12+150+120", "background", true,
                "env", Map.of("DISPLAY", ":0"))));
        assertThat(xterm.statusCode()).as(xterm.body()).isEqualTo(201);
        int[] red = until("a red window in a screenshot", () -> {
            try {
                int[] box = redBox(screenshot());
                return box != null && box[2] - box[0] > 100 && box[3] - box[1] > 60 ? box : null;
            } catch (Exception e) {
                throw new AssertionError(e);
            }
        });
        int x = (red[0] + red[2]) / 2;
        int y = (red[1] + red[3]) / 2;
        JsonNode results = act("[{\"action\": \"left_click\", \"coordinate\": [" + x + ", " + y + "]},"
                + " {\"action\": \"type\", \"text\": \"echo typed-$((6*7)) > /tmp/typed.txt\"},"
                + " {\"action\": \"key\", \"text\": \"Return\"}, {\"action\": \"cursor_position\"},"
                + " {\"action\": \"screen_size\"}]");
        assertThat(results.get(3).get("x").asInt()).isEqualTo(x);
        assertThat(results.get(3).get("y").asInt()).isEqualTo(y);
        assertThat(results.get(4).get("width").asInt()).isEqualTo(800);
        assertThat(results.get(4).get("height").asInt()).isEqualTo(600);
        String typed = until("the typed command's file", () -> {
            try {
                HttpResponse<String> r = http.get(path("/files?path=/tmp/typed.txt"));
                return r.statusCode() == 200 ? r.body() : null;
            } catch (Exception e) {
                throw new AssertionError(e);
            }
        });
        assertThat(typed).isEqualTo("typed-42\n");
        JsonNode more = act("[{\"action\": \"left_click_drag\", \"start_coordinate\": [300, 300],"
                + " \"coordinate\": [320, 330]}, {\"action\": \"scroll\", \"coordinate\": [400, 400],"
                + " \"scroll_direction\": \"down\", \"scroll_amount\": 3}, {\"action\": \"double_click\"},"
                + " {\"action\": \"key\", \"text\": \"ctrl+l\"}, {\"action\": \"wait\", \"duration\": 0.1},"
                + " {\"action\": \"cursor_position\"}]");
        assertThat(more.get(5).get("x").asInt()).isEqualTo(400);
        assertThat(more.get(5).get("y").asInt()).isEqualTo(400);
        assertError(http.postJson(path("/desktop/actions"), "{\"actions\": [{\"action\": \"cursor_position\"},"
                + " {\"action\": \"left_click\", \"coordinate\": [5000, 5]}]}"), 400, "invalid_request",
                "within the 800x600 screen");
        assertError(http.postJson(path("/desktop/actions"), "{\"actions\": [{\"action\": \"zoom\"}]}"), 400,
                "invalid_request", "unknown action 'zoom'");
        assertError(http.postJson(path("/desktop/actions"), "{\"actions\": [{\"action\": \"type\"}]}"), 400,
                "invalid_request", "type needs");

        String page = until("noVNC's page through the ports proxy", () -> {
            try {
                HttpResponse<String> r = http.get(path("/ports/6080/vnc.html"));
                return r.statusCode() == 200 ? r.body() : null;
            } catch (Exception e) {
                throw new AssertionError(e);
            }
        });
        assertThat(page).contains("noVNC");
        assertThat(new String(vncGreeting(), StandardCharsets.US_ASCII)).startsWith("RFB 003.");
    }

    /** The first bytes the VNC server sends, through noVNC's WebSocket bridge and the ports proxy's upgrade. */
    private static byte[] vncGreeting() throws Exception {
        CompletableFuture<byte[]> first = new CompletableFuture<>();
        WebSocket ws = http.client().newWebSocketBuilder().subprotocols("binary").buildAsync(
                URI.create(http.base().replace("http:", "ws:") + path("/ports/6080/websockify")),
                new WebSocket.Listener() {
                    @Override
                    public CompletionStage<?> onBinary(WebSocket socket, ByteBuffer data, boolean last) {
                        byte[] bytes = new byte[data.remaining()];
                        data.get(bytes);
                        first.complete(bytes);
                        return null;
                    }

                    @Override
                    public void onError(WebSocket socket, Throwable error) {
                        first.completeExceptionally(error);
                    }
                }).get(30, TimeUnit.SECONDS);
        try {
            return first.get(30, TimeUnit.SECONDS);
        } finally {
            ws.abort();
        }
    }

    @Test
    void badActionsAreRefusedBeforeAnyIsDone() throws Exception {
        requireDesktop();
        HttpResponse<String> started = http.postJson(path("/desktop"), "{\"width\": 100}");
        assertError(started, 400, "invalid_request", "width is 320 to 3840");
        assertError(http.postJson(path("/desktop/actions"), "{\"actions\": []}"), 400, "invalid_request",
                "1 to 100 actions");
    }
}
