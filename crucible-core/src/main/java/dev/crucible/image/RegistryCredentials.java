package dev.crucible.image;

import java.util.Map;
import java.util.Optional;

/**
 * Logins for registries, from {@code CRUCIBLE_REGISTRY_AUTH} or {@code ~/.docker/config.json}. SKELETON: issue 13.
 */
public final class RegistryCredentials {
    /** A user name and password (or token) for one registry. */
    public record Login(String user, String password) {}

    private final Map<String, Login> logins;

    private RegistryCredentials(Map<String, Login> logins) {
        this.logins = Map.copyOf(logins);
    }

    /** No logins: anonymous pulls only. */
    public static RegistryCredentials none() {
        return new RegistryCredentials(Map.of());
    }

    /**
     * The logins of this environment: {@code CRUCIBLE_REGISTRY_AUTH} (inline JSON in Docker's config.json shape, or a
     * path to such a file), else {@code $DOCKER_CONFIG/config.json}, else {@code ~/.docker/config.json}.
     */
    public static RegistryCredentials fromEnvironment(Map<String, String> env) {
        throw new UnsupportedOperationException("issue 13");
    }

    /** The login for a registry host[:port], if any. */
    public Optional<Login> forRegistry(String registry) {
        return Optional.ofNullable(logins.get(registry));
    }
}
