package dev.crucible.image.registry;

import dev.crucible.image.spec.ImageException;
import dev.crucible.image.spec.ImageFormats;
import dev.crucible.image.spec.ImageRef;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.URLEncoder;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.List;
import java.util.Optional;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;

/**
 * Answers a registry's 401: for {@code Bearer realm=…,service=…} a pull (or push) token for the repository from the realm
 * (with the registry's login as Basic credentials when there is one), for {@code Basic} the login itself. The login
 * goes to a realm only over https, or plain HTTP to a loopback or insecure-listed host. Not thread-safe.
 */
final class RegistryAuth {
    private static final int MAX_TOKEN_RESPONSE = 1 << 20;

    /** Sends a request; network failures are already {@link ImageException}s (UNREACHABLE). */
    interface Sender {
        HttpResponse<InputStream> send(HttpRequest request) throws IOException;
    }

    private final ImageRef ref;
    private final ImagePuller.Options options;
    private final Optional<RegistryCredentials.Login> login;
    private final Sender sender;
    private final String actions;

    /** @param actions what a token is asked for: {@code pull}, or {@code pull,push} for a push */
    RegistryAuth(ImageRef ref, ImagePuller.Options options, Sender sender, String actions) {
        this.actions = actions;
        this.ref = ref;
        this.options = options;
        this.login = options.credentials().forRegistry(ref.registry());
        this.sender = sender;
    }

    /** The {@code Authorization} header value that answers these {@code WWW-Authenticate} challenges. */
    String authorize(List<String> wwwAuthenticate) throws IOException {
        List<AuthChallenge> challenges = AuthChallenge.parseAll(wwwAuthenticate);
        Optional<AuthChallenge> bearer = challenges.stream().filter(c -> c.scheme().equals("bearer")).findFirst();
        if (bearer.isPresent()) {
            return "Bearer " + token(bearer.get());
        }
        if (challenges.stream().anyMatch(c -> c.scheme().equals("basic"))) {
            return basic(login.orElseThrow(() -> refused("asks for a login")));
        }
        throw refused("asks for authentication Crucible does not speak (" + String.join("; ", wwwAuthenticate) + ")");
    }

    private String token(AuthChallenge challenge) throws IOException {
        URI realm = realm(challenge.param("realm"));
        String query = "scope=" + URLEncoder.encode("repository:" + ref.repository() + ":" + actions, StandardCharsets.UTF_8);
        if (challenge.param("service") != null) {
            query = "service=" + URLEncoder.encode(challenge.param("service"), StandardCharsets.UTF_8) + "&" + query;
        }
        URI uri = URI.create(realm + (realm.getRawQuery() == null ? "?" : "&") + query);
        HttpRequest.Builder request = HttpRequest.newBuilder(uri).GET().timeout(options.timeout())
                .header("User-Agent", RegistryClient.USER_AGENT);
        if (login.isPresent()) {
            if (realm.getScheme().equals("http") && !RegistryClient.plainHttpAllowed(realm.getRawAuthority(),
                    options.insecureRegistries())) {
                throw refused("names the token service " + realm + ", which is plain HTTP: Crucible does not send"
                        + " your login there; if you trust that network, list " + realm.getRawAuthority()
                        + " as an insecure registry");
            }
            request.header("Authorization", basic(login.get()));
        }
        HttpResponse<InputStream> response = sender.send(request.build());
        try (InputStream body = new ReadTimeout(response.body(), options.timeout())) {
            int status = response.statusCode();
            if (status == 401 || status == 403) {
                throw refused("'s token service " + realm.getRawAuthority() + " refused "
                        + login.map(l -> "the login of " + l.user()).orElse("an anonymous token") + " (HTTP " + status
                        + ")");
            }
            if (status != 200) {
                throw new ImageException(ImageException.Failure.UNREACHABLE, "registry " + ref.registry()
                        + " unreachable: its token service " + realm.getRawAuthority() + " answered HTTP " + status);
            }
            return tokenOf(RegistryClient.readAtMost(body, MAX_TOKEN_RESPONSE), realm);
        }
    }

    private URI realm(String realm) throws ImageException {
        try {
            URI uri = realm == null ? null : new URI(realm);
            if (uri != null && uri.getRawAuthority() != null
                    && (uri.getScheme().equals("https") || uri.getScheme().equals("http"))) {
                return uri;
            }
        } catch (URISyntaxException e) {
            // refused below
        }
        throw refused("sent a bearer challenge without a usable realm (" + realm + ")");
    }

    private String tokenOf(byte[] body, URI realm) throws ImageException {
        try {
            JsonNode json = ImageFormats.JSON.readTree(body);
            for (String field : List.of("token", "access_token")) {
                JsonNode token = json == null ? null : json.get(field);
                if (token != null && token.isString() && !token.stringValue().isBlank()) {
                    return token.stringValue();
                }
            }
        } catch (JacksonException e) {
            // refused below
        }
        throw new ImageException(ImageException.Failure.UNAUTHORIZED, "the token service " + realm.getRawAuthority()
                + " of registry " + ref.registry() + " answered without a token (neither \"token\" nor"
                + " \"access_token\")");
    }

    private static String basic(RegistryCredentials.Login login) {
        return "Basic " + Base64.getEncoder().encodeToString((login.user() + ":" + login.password())
                .getBytes(StandardCharsets.UTF_8));
    }

    /** UNAUTHORIZED: "registry R WHY: …how to log in". */
    ImageException refused(String why) {
        return new ImageException(ImageException.Failure.UNAUTHORIZED, "registry " + ref.registry()
                + (why.startsWith("'") ? "" : " ") + why + " for " + ref.repository() + ": " + howToLogIn());
    }

    String howToLogIn() {
        return login.isPresent() ? "check the login for " + ref.registry() + " (run docker login " + ref.registry()
                + " or set CRUCIBLE_REGISTRY_AUTH)" : "run docker login " + ref.registry()
                + " or set CRUCIBLE_REGISTRY_AUTH (the repository may also not exist, or be private)";
    }
}
