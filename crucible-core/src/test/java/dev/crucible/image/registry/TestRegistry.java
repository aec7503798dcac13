package dev.crucible.image.registry;

import static org.awaitility.Awaitility.await;

import dev.crucible.image.spec.Digests;
import dev.crucible.image.spec.ImageException;
import dev.crucible.image.spec.ImageFormats;
import dev.crucible.image.spec.ImageRef;
import dev.crucible.image.store.StoreFixtures;
import dev.crucible.testhost.Capability;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.awaitility.core.ConditionTimeoutException;
import org.awaitility.core.TerminalFailureException;

/**
 * A real OCI registry for tests: Debian's {@code docker-registry} (CNCF distribution 2.8) serving its own config (not
 * the packaged one) on a free loopback port, storing under {@code dir}; optionally with token auth whose token service
 * ({@link TestTokenServer}) grants pull and push to one login and nothing to anonymous requests. Images are pushed
 * with skopeo from an OCI layout, or by the registry's HTTP API. {@link #close()} stops the registry and the token
 * service. Shared with other modules' tests through the core test-jar; a test without {@code docker-registry} is
 * skipped ({@link #requireInstalled()}).
 */
public final class TestRegistry implements AutoCloseable {
    public static final Path BINARY = Path.of("/usr/bin/docker-registry");
    private static final String ACCEPT = String.join(", ", ImageFormats.OCI_INDEX, ImageFormats.OCI_MANIFEST,
            ImageFormats.DOCKER_LIST, ImageFormats.DOCKER_MANIFEST);

    private final Path dir;
    private final int port;
    private final TestTokenServer tokens;
    private final String user;
    private final String password;
    private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    private Process process;
    private Thread reaper;

    private TestRegistry(Path dir, int port, TestTokenServer tokens, String user, String password) {
        this.dir = dir;
        this.port = port;
        this.tokens = tokens;
        this.user = user;
        this.password = password;
    }

    /** Skips the calling test, saying why, unless {@code docker-registry} is installed. */
    public static void requireInstalled() {
        Capability.DOCKER_REGISTRY.require();
    }

    /** A registry anyone may push to and pull from, storing under {@code dir}. */
    public static TestRegistry start(Path dir) throws IOException, InterruptedException {
        requireInstalled();
        return launch(new TestRegistry(dir, freePort(), null, null, null));
    }

    /** A registry with token auth: {@code user}/{@code password} may push and pull, anonymous requests get nothing. */
    public static TestRegistry startWithTokenAuth(Path dir, String user, String password)
            throws IOException, InterruptedException {
        requireInstalled();
        Files.createDirectories(dir);
        TestTokenServer tokens = TestTokenServer.start(dir, user, password);
        return launch(new TestRegistry(dir, freePort(), tokens, user, password));
    }

    private static TestRegistry launch(TestRegistry registry) throws IOException, InterruptedException {
        try {
            registry.run();
            return registry;
        } catch (IOException | InterruptedException | RuntimeException | AssertionError e) {
            registry.close();
            throw e;
        }
    }

    /** {@code 127.0.0.1:PORT}: the registry part of a reference. */
    public String host() {
        return "127.0.0.1:" + port;
    }

    public int port() {
        return port;
    }

    /** {@code host()/repositoryAndTag} parsed, e.g. {@code ref("team/app:1")}. */
    public ImageRef ref(String repositoryAndTag) throws ImageException {
        return ImageRef.parse(host() + "/" + repositoryAndTag);
    }

    /** The registry's storage root (its blobs are under {@code docker/registry/v2/blobs/sha256}). */
    public Path storage() {
        return dir.resolve("storage");
    }

    /** Where the registry keeps a blob's bytes (to corrupt it in a test). */
    public Path blobFile(String digest) {
        String hex = digest.substring("sha256:".length());
        return storage().resolve("docker/registry/v2/blobs/sha256").resolve(hex.substring(0, 2)).resolve(hex)
                .resolve("data");
    }

    /** The token requests the token service saw (empty without token auth). */
    List<TestTokenServer.Request> tokenRequests() {
        return tokens == null ? List.of() : tokens.requests();
    }

    /** The login of a token-auth registry, as Docker's config.json shape; null without auth. */
    public String dockerConfigJson() {
        if (user == null) {
            return null;
        }
        String auth = Base64.getEncoder().encodeToString((user + ":" + password)
                .getBytes(StandardCharsets.UTF_8));
        return "{\"auths\": {\"" + host() + "\": {\"auth\": \"" + auth + "\"}}}";
    }

    /**
     * Pushes image {@code tag} of an OCI layout to {@code repository:tag} with skopeo ({@code options} such as
     * {@code --format v2s2}); returns the manifest digest the registry serves for the tag.
     */
    public String pushLayout(Path layout, String tag, String repository, String... options)
            throws IOException, InterruptedException {
        Capability.SKOPEO.require();
        Path policy = dir.resolve("policy.json");
        Files.writeString(policy, "{\"default\": [{\"type\": \"insecureAcceptAnything\"}]}");
        List<String> command = new ArrayList<>(List.of("skopeo", "--policy", policy.toString(), "copy", "--quiet",
                "--dest-tls-verify=false"));
        if (user != null) {
            command.addAll(List.of("--dest-creds", user + ":" + password));
        }
        command.addAll(List.of(options));
        command.addAll(List.of("oci:" + layout + ":" + tag, "docker://" + host() + "/" + repository + ":" + tag));
        StoreFixtures.run(dir, command.toArray(String[]::new));
        return manifestDigest(repository, tag);
    }

    /** Uploads a blob through the HTTP API (monolithic upload); returns its digest. */
    public String putBlob(String repository, byte[] bytes) throws IOException, InterruptedException {
        String digest = Digests.of(bytes);
        HttpResponse<String> started = send(repository, HttpRequest.newBuilder(uri("/v2/" + repository
                + "/blobs/uploads/")).POST(HttpRequest.BodyPublishers.noBody()), 202);
        URI location = uri("/").resolve(started.headers().firstValue("Location").orElseThrow());
        String separator = location.getRawQuery() == null ? "?" : "&";
        send(repository, HttpRequest.newBuilder(URI.create(location + separator + "digest=" + digest))
                .header("Content-Type", "application/octet-stream")
                .PUT(HttpRequest.BodyPublishers.ofByteArray(bytes)), 201);
        return digest;
    }

    /** Puts a manifest (or index) under {@code reference} through the HTTP API; returns its digest. */
    public String putManifest(String repository, String reference, String mediaType, byte[] manifest)
            throws IOException, InterruptedException {
        send(repository, HttpRequest.newBuilder(uri("/v2/" + repository + "/manifests/" + reference))
                .header("Content-Type", mediaType).PUT(HttpRequest.BodyPublishers.ofByteArray(manifest)), 201);
        return Digests.of(manifest);
    }

    /** Pushes an OCI image of plain-tar layers (and a config for this host's platform); returns its digest. */
    public String pushImage(String repository, String tag, byte[]... layers) throws IOException, InterruptedException {
        for (byte[] layer : layers) {
            putBlob(repository, layer);
        }
        byte[] config = StoreFixtures.config(repository + ":" + tag, List.of(layers));
        putBlob(repository, config);
        return putManifest(repository, tag, ImageFormats.OCI_MANIFEST,
                StoreFixtures.manifest(config, List.of(layers), ImageFormats.OCI_LAYER_TAR));
    }

    /** The bytes of manifest {@code repository:reference} as the registry serves them. */
    public byte[] manifest(String repository, String reference) throws IOException, InterruptedException {
        return send(repository, HttpRequest.newBuilder(uri("/v2/" + repository + "/manifests/" + reference))
                .header("Accept", ACCEPT), 200, HttpResponse.BodyHandlers.ofByteArray()).body();
    }

    /** The digest the registry names {@code repository:reference} by (its {@code Docker-Content-Digest}). */
    public String manifestDigest(String repository, String reference) throws IOException, InterruptedException {
        HttpResponse<String> response = send(repository, HttpRequest.newBuilder(uri("/v2/" + repository
                + "/manifests/" + reference)).header("Accept", ACCEPT).method("HEAD",
                HttpRequest.BodyPublishers.noBody()), 200);
        return response.headers().firstValue("Docker-Content-Digest").orElseThrow();
    }

    private HttpResponse<String> send(String repository, HttpRequest.Builder request, int expected)
            throws IOException, InterruptedException {
        return send(repository, request, expected, HttpResponse.BodyHandlers.ofString());
    }

    private <T> HttpResponse<T> send(String repository, HttpRequest.Builder request, int expected,
            HttpResponse.BodyHandler<T> body) throws IOException, InterruptedException {
        if (tokens != null) {
            request.header("Authorization", "Bearer " + tokens.mint(user, repository, List.of("pull", "push")));
        }
        HttpResponse<T> response = http.send(request.build(), body);
        if (response.statusCode() != expected) {
            throw new IOException(response.request().method() + " " + response.request().uri() + " answered "
                    + response.statusCode() + " (expected " + expected + "): " + response.body());
        }
        return response;
    }

    private URI uri(String path) {
        return URI.create("http://" + host() + path);
    }

    private void run() throws IOException, InterruptedException {
        Files.createDirectories(storage());
        Path config = dir.resolve("registry.yml");
        Files.writeString(config, config());
        Path log = dir.resolve("registry.log");
        ProcessBuilder builder = new ProcessBuilder(BINARY.toString(), "serve", config.toString())
                .redirectErrorStream(true).redirectOutput(log.toFile());
        builder.environment().keySet().removeIf(name -> name.startsWith("REGISTRY_")); // they override the config
        process = builder.start();
        Process started = process;
        reaper = new Thread(started::destroyForcibly, "test-registry-reaper"); // a test JVM that exits early
        Runtime.getRuntime().addShutdownHook(reaper);
        try {
            await("docker-registry answering on " + host()).atMost(Duration.ofSeconds(30)).pollDelay(Duration.ZERO)
                    .pollInterval(Duration.ofMillis(50)).failFast("docker-registry exited", () -> !started.isAlive())
                    .until(this::answers);
        } catch (ConditionTimeoutException | TerminalFailureException e) {
            throw new IOException("docker-registry did not answer on " + host() + ": " + Files.readString(log), e);
        }
    }

    private boolean answers() throws InterruptedException {
        try {
            int status = http.send(HttpRequest.newBuilder(uri("/v2/")).build(), HttpResponse.BodyHandlers.discarding())
                    .statusCode();
            return status == 200 || status == 401;
        } catch (IOException e) {
            return false;
        }
    }

    private String config() {
        String yaml = """
                version: 0.1
                log:
                  level: warn
                  accesslog:
                    disabled: true
                storage:
                  filesystem:
                    rootdirectory: %s
                  delete:
                    enabled: true
                http:
                  addr: 127.0.0.1:%d
                  secret: crucible-test-registry
                """.formatted(storage(), port);
        if (tokens != null) {
            yaml += """
                    auth:
                      token:
                        realm: %s
                        service: %s
                        issuer: %s
                        rootcertbundle: %s
                    """.formatted(tokens.realm(), TestTokenServer.SERVICE, TestTokenServer.ISSUER,
                    tokens.certificateFile());
        }
        return yaml;
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        }
    }

    /** Stops the registry (its storage stays): pulls from it are then UNREACHABLE. */
    public void stop() throws InterruptedException {
        if (process != null && process.isAlive()) {
            process.destroy();
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor();
            }
        }
        if (reaper != null) {
            try {
                Runtime.getRuntime().removeShutdownHook(reaper);
            } catch (IllegalStateException shuttingDown) {
                // the hook is running or about to: nothing left to do
            }
            reaper = null;
        }
    }

    @Override
    public void close() throws InterruptedException {
        try {
            stop();
        } finally {
            http.close();
            if (tokens != null) {
                tokens.close();
            }
        }
    }
}
