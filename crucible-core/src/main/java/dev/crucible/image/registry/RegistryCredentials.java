package dev.crucible.image.registry;

import dev.crucible.image.spec.ImageRef;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Base64;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Logins for registries, read once from {@code CRUCIBLE_REGISTRY_AUTH} or Docker's {@code config.json}. Only the
 * {@code auths} section is read: an entry's {@code auth} (base64 of {@code user:password}) or its {@code username} and
 * {@code password}. Credential helpers ({@code credsStore}, {@code credHelpers}) and {@code identitytoken} are not
 * supported and are ignored: log in with a password or token in the file, or put one in {@code CRUCIBLE_REGISTRY_AUTH}.
 * Immutable and thread-safe; never returns null.
 */
public final class RegistryCredentials {
    /** A user name and password (or token) for one registry; {@link #toString()} does not show the password. */
    public record Login(String user, String password) {
        @Override
        public String toString() {
            return "Login[user=" + user + ", password=***]";
        }
    }

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final String HELP = "expected Docker's config.json shape {\"auths\": {\"HOST\": {\"auth\":"
            + " \"base64(user:password)\"}}}";

    private final Map<String, Login> logins;

    private RegistryCredentials(Map<String, Login> logins) {
        this.logins = Map.copyOf(logins);
    }

    /** No logins: anonymous pulls only. */
    public static RegistryCredentials none() {
        return new RegistryCredentials(Map.of());
    }

    /**
     * The logins of this environment: {@code CRUCIBLE_REGISTRY_AUTH} (inline JSON in Docker's config.json shape when it
     * starts with <code>{</code>, else a path to such a file), else {@code $DOCKER_CONFIG/config.json}, else
     * {@code $HOME/.docker/config.json}; none when the chosen Docker file does not exist.
     *
     * @throws IllegalArgumentException in one line saying what to fix: malformed JSON or entries, or a
     *     {@code CRUCIBLE_REGISTRY_AUTH} file that cannot be read
     */
    public static RegistryCredentials fromEnvironment(Map<String, String> env) {
        String inline = env.get("CRUCIBLE_REGISTRY_AUTH");
        if (inline != null && !inline.isBlank()) {
            String value = inline.strip();
            if (value.startsWith("{")) {
                return parse(value.getBytes(StandardCharsets.UTF_8), "CRUCIBLE_REGISTRY_AUTH");
            }
            return read(Path.of(value), true);
        }
        String dockerConfig = env.get("DOCKER_CONFIG");
        if (dockerConfig != null && !dockerConfig.isBlank()) {
            return read(Path.of(dockerConfig, "config.json"), false);
        }
        String home = env.get("HOME");
        if (home != null && !home.isBlank()) {
            return read(Path.of(home, ".docker", "config.json"), false);
        }
        return none();
    }

    /** The login for a registry host[:port] ({@code docker.io} for Docker Hub), if any. */
    public Optional<Login> forRegistry(String registry) {
        return registry == null ? Optional.empty() : Optional.ofNullable(logins.get(registry.toLowerCase(Locale.ROOT)));
    }

    private static RegistryCredentials read(Path file, boolean named) {
        if (!named && !Files.exists(file)) {
            return none();
        }
        try {
            return parse(Files.readAllBytes(file), file.toString());
        } catch (IOException e) {
            throw new IllegalArgumentException((named ? "CRUCIBLE_REGISTRY_AUTH names " + file + ", which"
                    : "registry logins in " + file) + " cannot be read (" + e + "): set CRUCIBLE_REGISTRY_AUTH to a"
                    + " readable config.json or to inline JSON");
        }
    }

    /** Reads a config.json's {@code auths}; {@code source} names it in errors. */
    static RegistryCredentials parse(byte[] json, String source) {
        JsonNode root;
        try {
            root = JSON.readTree(json);
        } catch (JacksonException e) {
            throw new IllegalArgumentException(source + " is not valid JSON (" + e.getOriginalMessage().lines()
                    .findFirst().orElse("") + "): " + HELP);
        }
        if (root == null || !root.isObject()) {
            throw new IllegalArgumentException(source + " is not a JSON object: " + HELP);
        }
        JsonNode auths = root.path("auths");
        if (auths.isMissingNode() || auths.isNull()) {
            return none();
        }
        if (!auths.isObject()) {
            throw new IllegalArgumentException(source + ": \"auths\" is not an object: " + HELP);
        }
        Map<String, Login> logins = new HashMap<>();
        for (Map.Entry<String, JsonNode> entry : auths.properties()) {
            login(entry.getValue(), source + ": auths[\"" + entry.getKey() + "\"]")
                    .ifPresent(login -> logins.put(registryOf(entry.getKey()), login));
        }
        return new RegistryCredentials(logins);
    }

    /** One entry: {@code auth}, else {@code username} + {@code password}; an empty entry (a helper's) is none. */
    private static Optional<Login> login(JsonNode entry, String where) {
        if (!entry.isObject()) {
            throw new IllegalArgumentException(where + " is not an object: " + HELP);
        }
        String auth = text(entry, "auth", where);
        if (auth != null && !auth.isEmpty()) {
            String decoded;
            try {
                decoded = new String(Base64.getDecoder().decode(auth.strip()), StandardCharsets.UTF_8);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(where + ".auth is not base64: " + HELP);
            }
            int colon = decoded.indexOf(':');
            if (colon <= 0) {
                throw new IllegalArgumentException(where + ".auth does not decode to user:password: " + HELP);
            }
            return Optional.of(new Login(decoded.substring(0, colon), decoded.substring(colon + 1)));
        }
        String user = text(entry, "username", where);
        String password = text(entry, "password", where);
        if (user != null && !user.isEmpty()) {
            if (password == null) {
                throw new IllegalArgumentException(where + " has a username but no password: " + HELP);
            }
            return Optional.of(new Login(user, password));
        }
        return Optional.empty();
    }

    private static String text(JsonNode entry, String field, String where) {
        JsonNode value = entry.get(field);
        if (value == null || value.isNull()) {
            return null;
        }
        if (!value.isString()) {
            throw new IllegalArgumentException(where + "." + field + " is not a string: " + HELP);
        }
        return value.stringValue();
    }

    /**
     * The registry a config key names: {@code https://index.docker.io/v1/} is {@code docker.io}; a URL loses its scheme
     * and path ({@code https://ghcr.io/v2/} is {@code ghcr.io}); {@code host[:port]} stays, lowercased.
     */
    static String registryOf(String key) {
        String host = key.strip().toLowerCase(Locale.ROOT).replaceFirst("^[a-z][a-z0-9+.-]*://", "");
        int slash = host.indexOf('/');
        if (slash >= 0) {
            host = host.substring(0, slash);
        }
        return switch (host) {
            case "index.docker.io", "registry-1.docker.io", "registry.hub.docker.com" -> ImageRef.DOCKER_HUB;
            default -> host;
        };
    }
}
