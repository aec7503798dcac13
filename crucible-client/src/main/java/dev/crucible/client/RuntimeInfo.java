package dev.crucible.client;

import java.util.List;

/** One entry of {@code GET /v1/runtimes}; {@code reason} says why an unavailable runtime is unavailable. */
public record RuntimeInfo(String language, List<String> aliases, String version, boolean available, String reason,
        String image, String imageDigest, String isolation) {}
