package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.TestHost;
import dev.crucible.image.store.TestImages;
import java.io.ByteArrayOutputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.Map;
import java.util.Set;
import java.util.zip.GZIPOutputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;
import org.apache.commons.compress.archivers.tar.TarConstants;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/**
 * E2B's template API (issue 52) as the official SDK calls it ({@code node e2b.mjs template}: build from the builder,
 * upload, logs, alias, a sandbox of the built image, a cached upload, a failing step), and another token kept out of a
 * template it did not make.
 */
class E2bTemplateTest {
    static final String OTHER = "e2b_" + "fedcba9876543210fedcba9876543210fedcba98";
    static CrucibleServer server;
    static final HttpClient HTTP = HttpClient.newHttpClient();

    @BeforeAll
    static void start() throws Exception {
        TestImages.debianPython(TestHost.images());
        server = CrucibleServer.start(Http.config().withPort(0).withTokens(Set.of(E2bSdkTest.TOKEN, OTHER))
                .withPool(Map.of()), TestHost.crucible());
    }

    @AfterAll
    static void stop() {
        server.close();
    }

    private static HttpResponse<String> call(String token, String method, String path, String body) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + path))
                .header("X-API-Key", token).header("Content-Type", "application/json")
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody()
                        : HttpRequest.BodyPublishers.ofString(body));
        return HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void theOfficialSdkBuildsATemplateAndMakesSandboxesOfIt() throws Exception {
        E2bSdkTest.assertRun("template", E2bSdkTest.nodeScenario("template", server.port(),
                Map.of("E2B_TEMPLATE_BASE", TestImages.DEBIAN_PYTHON)));
    }

    @Test
    void anotherTokensTemplateAliasAndBuildAreNotFound() throws Exception {
        HttpResponse<String> made = call(E2bSdkTest.TOKEN, "POST", "/v3/templates", "{\"name\": \"mine-only\"}");
        assertThat(made.statusCode()).as(made.body()).isEqualTo(202);
        JsonNode ids = E2bSdkTest.JSON.readTree(made.body());
        String template = ids.get("templateID").asString();
        String build = ids.get("buildID").asString();
        HttpResponse<String> started = call(E2bSdkTest.TOKEN, "POST", "/v2/templates/" + template + "/builds/" + build,
                "{\"fromImage\": \"" + TestImages.DEBIAN_PYTHON + "\", \"steps\": [{\"type\": \"RUN\", \"args\":"
                        + " [\"echo mine > /opt/mine\"]}]}");
        assertThat(started.statusCode()).as(started.body()).isEqualTo(202);
        String status;
        do { // polled: the build runs in the background
            HttpResponse<String> s = call(E2bSdkTest.TOKEN, "GET", "/templates/" + template + "/builds/" + build
                    + "/status", null);
            status = E2bSdkTest.JSON.readTree(s.body()).path("status").asString();
        } while (status.equals("building") || status.equals("waiting"));
        assertThat(status).isEqualTo("ready");
        assertThat(call(E2bSdkTest.TOKEN, "GET", "/templates/aliases/mine-only", null).statusCode()).isEqualTo(200);

        for (String[] c : new String[][] {
            {"GET", "/templates/aliases/mine-only", null},
            {"GET", "/templates/" + template, null},
            {"GET", "/templates/" + template + "/builds/" + build + "/status", null},
            {"GET", "/templates/" + template + "/files/" + "0".repeat(64), null},
            {"POST", "/v2/templates/" + template + "/builds/" + build, "{\"fromImage\": \"x\"}"},
            {"DELETE", "/templates/" + template, null},
            {"POST", "/sandboxes", "{\"templateID\": \"mine-only\"}"},
            {"POST", "/sandboxes", "{\"templateID\": \"" + template + "\"}"}}) {
            HttpResponse<String> r = call(OTHER, c[0], c[1], c[2]);
            assertThat(r.statusCode()).as(c[0] + " " + c[1] + ": " + r.body()).isEqualTo(404);
        }
        HttpResponse<String> list = call(OTHER, "GET", "/templates", null);
        assertThat(list.body()).isEqualTo("[]");
        HttpResponse<String> upload = call(OTHER, "PUT", "/templates/uploads/" + "a".repeat(64), "x");
        assertThat(upload.statusCode()).as("an upload secret never granted").isEqualTo(404);
    }

    @Test
    void anUploadClimbingOutFailsItsCopyStepAndOneWritingThroughALinkNeverReachesTheHost() throws Exception {
        Path outside = Files.createTempFile("e2b-template-outside", ".txt");
        try {
            for (String[] entry : new String[][] {{"../escape.txt", null}, {"app/link", outside.toString()}}) {
                ByteArrayOutputStream bytes = new ByteArrayOutputStream();
                try (TarArchiveOutputStream tar = new TarArchiveOutputStream(new GZIPOutputStream(bytes))) {
                    TarArchiveEntry e = entry[1] == null ? new TarArchiveEntry(entry[0], true)
                            : new TarArchiveEntry(entry[0], TarConstants.LF_SYMLINK);
                    if (entry[1] == null) {
                        e.setSize(3);
                        tar.putArchiveEntry(e);
                        tar.write("bad".getBytes(StandardCharsets.UTF_8));
                    } else {
                        e.setLinkName(entry[1]);
                        tar.putArchiveEntry(e);
                    }
                    tar.closeArchiveEntry();
                    if (entry[1] != null) { // then a file written through the link
                        TarArchiveEntry through = new TarArchiveEntry("app/link", true);
                        through.setSize(3);
                        tar.putArchiveEntry(through);
                        tar.write("bad".getBytes(StandardCharsets.UTF_8));
                        tar.closeArchiveEntry();
                    }
                }
                String hash = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes.toByteArray()));
                JsonNode ids = E2bSdkTest.JSON.readTree(call(E2bSdkTest.TOKEN, "POST", "/v3/templates",
                        "{\"name\": \"hostile\"}").body());
                String template = ids.get("templateID").asString();
                String build = ids.get("buildID").asString();
                JsonNode link = E2bSdkTest.JSON.readTree(call(E2bSdkTest.TOKEN, "GET", "/templates/" + template
                        + "/files/" + hash, null).body());
                assertThat(link.get("present").asBoolean()).isFalse();
                HttpResponse<String> put = HTTP.send(HttpRequest.newBuilder(URI.create(link.get("url").asString()))
                        .PUT(HttpRequest.BodyPublishers.ofByteArray(bytes.toByteArray())).build(),
                        HttpResponse.BodyHandlers.ofString());
                assertThat(put.statusCode()).isEqualTo(200);
                call(E2bSdkTest.TOKEN, "POST", "/v2/templates/" + template + "/builds/" + build, "{\"fromImage\": \""
                        + TestImages.DEBIAN_PYTHON + "\", \"steps\": [{\"type\": \"RUN\", \"args\": [\"true\"]},"
                        + " {\"type\": \"COPY\", \"args\": [\"app\", \"/opt/app\", \"\", \"\"], \"filesHash\": \""
                        + hash + "\"}]}");
                JsonNode status;
                do { // polled: the build runs in the background
                    status = E2bSdkTest.JSON.readTree(call(E2bSdkTest.TOKEN, "GET", "/templates/" + template
                            + "/builds/" + build + "/status", null).body());
                } while (status.path("status").asString().matches("building|waiting"));
                if (entry[1] == null) { // ../ refused by the layer rules, naming the COPY step
                    assertThat(status.path("status").asString()).as(status.toString()).isEqualTo("error");
                    assertThat(status.path("reason").path("step").asString()).isEqualTo("2");
                    assertThat(status.path("reason").path("message").asString()).contains("step 2 (COPY)", "refused");
                } else { // a link out is kept as a link and the file after it replaces it: never written through
                    assertThat(status.path("status").asString()).as(status.toString()).isEqualTo("ready");
                }
                assertThat(Files.readString(outside)).isEmpty();
                assertThat(Path.of("/tmp/escape.txt")).doesNotExist();
            }
        } finally {
            Files.delete(outside);
        }
    }
}
