package dev.crucible.runtime;

/**
 * The image a runtime runs in.
 *
 * @param reference the image as the runtime or the request names it, e.g. {@code python:3.12-slim}
 * @param digest the manifest digest it resolved to ({@code sha256:…}), or null while it is not in the store
 */
public record RuntimeImage(String reference, String digest) {}
