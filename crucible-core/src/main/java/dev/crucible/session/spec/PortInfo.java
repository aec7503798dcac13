package dev.crucible.session.spec;

import com.fasterxml.jackson.annotation.JsonProperty;

/**
 * A TCP port something listens on in a session's sandbox, as the API shows it.
 *
 * @param port the port, on the sandbox's own loopback (or any address of its namespace, which has only loopback)
 * @param path the API path that proxies HTTP to it ({@code /v1/sessions/{id}/ports/{port}/}, a bearer token needed;
 *     a browser takes a preview link instead)
 */
public record PortInfo(@JsonProperty("port") int port, @JsonProperty("path") String path) {}
