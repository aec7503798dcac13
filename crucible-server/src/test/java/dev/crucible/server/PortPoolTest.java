package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.TestHost;
import java.io.InputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/**
 * The connections the ports proxy keeps alive to a session's servers (issue 50 item 5), against real sandboxes: the
 * session's server (resources/ports/app.py) tells which connection asked (its peer's port) and which server it is (a
 * value drawn at its start). A connection is taken again only after an answer read to its framed end; one its server
 * closed, one whose answer was cut or had no framing, one that carried a client's body are never taken again; another
 * session never gets one.
 */
class PortPoolTest {
    static final int PORT = 8766;
    static CrucibleServer server;
    static Http alice;
    static String id;

    @BeforeAll
    static void start() throws Exception {
        server = CrucibleServer.start(Http.config().withPort(0).withTokens(Set.of("token-alice"))
                .withPool(Map.of()), TestHost.crucible());
        alice = Http.to(server, "token-alice");
        id = PortsTest.startApp(alice, PORT);
    }

    @AfterAll
    static void stop() {
        server.close();
    }

    private static String path(String session, String rest) {
        return "/v1/sessions/" + session + "/ports/" + PORT + rest;
    }

    private static JsonNode peer(String session) throws Exception {
        HttpResponse<String> r = alice.get(path(session, "/peer"));
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        return SessionApiTest.json(r);
    }

    private static int lastPeer(String pathPrefix) throws Exception {
        JsonNode seen = SessionApiTest.json(alice.get(path(id, "/seen")));
        for (int i = seen.size() - 1; i >= 0; i--) {
            if (seen.get(i).get("path").asText().startsWith(pathPrefix)) {
                return seen.get(i).get("peer").asInt();
            }
        }
        throw new AssertionError("the session's server saw no " + pathPrefix);
    }

    @Test
    void aSecondRequestGoesOverTheConnectionTheFirstLeft() throws Exception {
        int first = peer(id).get("peer").asInt();
        int second = peer(id).get("peer").asInt();
        int third = peer(id).get("peer").asInt();
        assertThat(second).as("one connection, kept alive between requests").isEqualTo(first);
        assertThat(third).isEqualTo(first);
    }

    @Test
    void aConnectionItsServerClosedIsNotTakenAgainAndTheNextRequestStillSucceeds() throws Exception {
        peer(id);
        HttpResponse<String> letGo = alice.get(path(id, "/let-go"));
        assertThat(letGo.statusCode()).isEqualTo(200);
        int closed = SessionApiTest.json(letGo).get("peer").asInt();
        for (int i = 0; i < 3; i++) {
            assertThat(peer(id).get("peer").asInt()).as("the server closed it").isNotEqualTo(closed);
        }
    }

    @Test
    void anAnswerWithoutFramingEndsItsConnection() throws Exception {
        int before = peer(id).get("peer").asInt();
        HttpResponse<String> unframed = alice.get(path(id, "/unframed"));
        assertThat(unframed.statusCode()).isEqualTo(200);
        assertThat(unframed.body()).isEqualTo("until the end");
        int used = lastPeer("/unframed");
        assertThat(used).as("it went over the kept connection").isEqualTo(before);
        int after = peer(id).get("peer").asInt();
        assertThat(after).as("a body that ends with its connection leaves none to keep").isNotEqualTo(used);
        assertThat(peer(id).get("peer").asInt()).as("the new one is kept").isEqualTo(after);
    }

    @Test
    void anAnswerNotReadToItsEndIsNeverTakenAgain() throws Exception {
        peer(id);
        String get = "GET " + path(id, "/stream?n=" + (64 << 20)) + " HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                + "Authorization: Bearer token-alice\r\n\r\n";
        try (Socket s = new Socket("127.0.0.1", server.port())) {
            s.getOutputStream().write(get.getBytes(StandardCharsets.ISO_8859_1));
            InputStream in = s.getInputStream();
            in.readNBytes(256 * 1024); // a part of the answer, then the client goes away
        }
        int cut = lastPeer("/stream");
        List<Integer> later = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            later.add(peer(id).get("peer").asInt());
        }
        assertThat(later).as("the connection of the cut answer").doesNotContain(cut);
    }

    @Test
    void aConnectionThatCarriedABodyIsClosedAndNeverKept() throws Exception {
        int kept = peer(id).get("peer").asInt();
        HttpResponse<String> up = alice.send(HttpRequest.newBuilder(URI.create(alice.base() + path(id, "/up")))
                .POST(HttpRequest.BodyPublishers.ofString("GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n")));
        assertThat(up.statusCode()).isEqualTo(200);
        JsonNode seen = SessionApiTest.json(alice.get(path(id, "/seen")));
        JsonNode post = null;
        for (JsonNode s : seen) {
            if (s.get("path").asText().equals("/up")) {
                post = s;
            }
        }
        assertThat(post).isNotNull();
        assertThat(post.get("headers").get("Connection").asText()).isEqualTo("close");
        assertThat(post.get("peer").asInt()).as("a body goes over a new connection").isNotEqualTo(kept);
        int postPeer = post.get("peer").asInt();
        for (int i = 0; i < 3; i++) {
            assertThat(peer(id).get("peer").asInt()).isNotEqualTo(postPeer);
        }
    }

    @Test
    void anotherSessionNeverGetsAConnectionKeptForThisOne() throws Exception {
        JsonNode mine = peer(id);
        String other = PortsTest.startApp(alice, PORT);
        try {
            JsonNode theirs = peer(other);
            assertThat(theirs.get("boot").asText()).as("the other session's own server answered")
                    .isNotEqualTo(mine.get("boot").asText());
            assertThat(peer(id).get("boot").asText()).isEqualTo(mine.get("boot").asText());
            assertThat(peer(other).get("boot").asText()).isEqualTo(theirs.get("boot").asText());
        } finally {
            alice.delete("/v1/sessions/" + other);
        }
    }
}
