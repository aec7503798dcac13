package dev.crucible.image.registry;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.crucible.image.store.StoreFixtures;
import dev.crucible.testhost.Capability;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.PrivateKey;
import java.security.Signature;
import java.security.spec.PKCS8EncodedKeySpec;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import tools.jackson.databind.json.JsonMapper;

/**
 * The token service of a token-auth {@link TestRegistry} (the Docker registry token protocol): signs RS256 JWTs whose
 * header carries the self-signed certificate ({@code x5c}) the registry trusts. A request with Basic
 * {@code user:password} gets the pull and push it asks for; an anonymous one a token without access (as Docker Hub
 * does for a private repository); a wrong password 401. Records every request.
 */
final class TestTokenServer implements AutoCloseable {
    static final String SERVICE = "crucible-test-registry";
    static final String ISSUER = "crucible-test-issuer";
    private static final JsonMapper JSON = JsonMapper.builder().build();

    /** One token request: the Basic user (null when anonymous) and the scopes asked for. */
    record Request(String user, List<String> scopes) {}

    private final HttpServer server;
    private final PrivateKey key;
    private final String certificate;
    private final Path certificateFile;
    private final String user;
    private final String password;
    private final List<Request> requests = new CopyOnWriteArrayList<>();

    private TestTokenServer(Path dir, String user, String password) throws IOException, InterruptedException {
        this.user = user;
        this.password = password;
        Path keyFile = dir.resolve("token-key.pem");
        this.certificateFile = dir.resolve("token-cert.pem");
        StoreFixtures.run(dir, "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                keyFile.toString(), "-out", certificateFile.toString(), "-days", "2", "-subj",
                "/CN=crucible-test-token");
        this.key = privateKey(pemBody(Files.readString(keyFile)));
        this.certificate = Base64.getEncoder().encodeToString(pemBody(Files.readString(certificateFile)));
        this.server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.createContext("/token", this::token);
        server.start();
    }

    /** Starts a token service in {@code dir} (its key and certificate go there) for one login. */
    static TestTokenServer start(Path dir, String user, String password) throws IOException, InterruptedException {
        Capability.OPENSSL.require();
        return new TestTokenServer(dir, user, password);
    }

    String realm() {
        return "http://127.0.0.1:" + server.getAddress().getPort() + "/token";
    }

    /** The certificate the registry's {@code rootcertbundle} names. */
    Path certificateFile() {
        return certificateFile;
    }

    List<Request> requests() {
        return List.copyOf(requests);
    }

    /** A token for {@code repository} with {@code actions}, as the service would grant the login. */
    String mint(String subject, String repository, List<String> actions) {
        long now = Instant.now().getEpochSecond();
        List<Map<String, Object>> access = repository == null ? List.of()
                : List.of(Map.of("type", "repository", "name", repository, "actions", actions));
        Map<String, Object> claims = Map.of("iss", ISSUER, "sub", subject, "aud", SERVICE, "exp", now + 600,
                "nbf", now - 30, "iat", now, "jti", UUID.randomUUID().toString(), "access", access);
        Map<String, Object> header = Map.of("typ", "JWT", "alg", "RS256", "x5c", List.of(certificate));
        String signed = base64url(JSON.writeValueAsBytes(header)) + "." + base64url(JSON.writeValueAsBytes(claims));
        try {
            Signature rsa = Signature.getInstance("SHA256withRSA");
            rsa.initSign(key);
            rsa.update(signed.getBytes(StandardCharsets.US_ASCII));
            return signed + "." + base64url(rsa.sign());
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    private void token(HttpExchange exchange) throws IOException {
        try (exchange) {
            List<String> scopes = new ArrayList<>();
            String query = exchange.getRequestURI().getRawQuery();
            for (String pair : query == null ? new String[0] : query.split("&")) {
                if (pair.startsWith("scope=")) {
                    scopes.add(URLDecoder.decode(pair.substring(6), StandardCharsets.UTF_8));
                }
            }
            String basic = exchange.getRequestHeaders().getFirst("Authorization");
            String login = basic == null || !basic.startsWith("Basic ") ? null
                    : new String(Base64.getDecoder().decode(basic.substring(6)), StandardCharsets.UTF_8);
            requests.add(new Request(login == null ? null : login.substring(0, login.indexOf(':')), scopes));
            if (login != null && !login.equals(user + ":" + password)) {
                exchange.sendResponseHeaders(401, -1);
                return;
            }
            String repository = null;
            List<String> actions = List.of();
            for (String scope : scopes) { // repository:NAME:ACTIONS; the last one names the token's repository
                String[] parts = scope.split(":");
                if (parts.length == 3 && parts[0].equals("repository") && login != null) {
                    repository = parts[1];
                    actions = List.of(parts[2].split(","));
                }
            }
            byte[] body = JSON.writeValueAsBytes(Map.of("token", mint(login == null ? "" : user, repository, actions),
                    "expires_in", 600));
            exchange.getResponseHeaders().set("Content-Type", "application/json");
            exchange.sendResponseHeaders(200, body.length);
            exchange.getResponseBody().write(body);
        }
    }

    private static byte[] pemBody(String pem) {
        String body = pem.replaceAll("-----[A-Z ]+-----", "").replaceAll("\\s", "");
        return Base64.getDecoder().decode(body);
    }

    private static PrivateKey privateKey(byte[] pkcs8) {
        try {
            return KeyFactory.getInstance("RSA").generatePrivate(new PKCS8EncodedKeySpec(pkcs8));
        } catch (GeneralSecurityException e) {
            throw new UncheckedIOException(new IOException("openssl wrote a key Java cannot read", e));
        }
    }

    private static String base64url(byte[] bytes) {
        return Base64.getUrlEncoder().withoutPadding().encodeToString(bytes);
    }

    @Override
    public void close() {
        server.stop(0);
    }
}
