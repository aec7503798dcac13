package dev.crucible.image.spec;

import java.util.Locale;
import java.util.regex.Pattern;

/**
 * A parsed image reference as Docker reads one: {@code python:3.12-slim} is {@code docker.io/library/python:3.12-slim},
 * {@code ghcr.io/org/app@sha256:…} names a digest, {@code 127.0.0.1:5000/team/img} a registry with a port. The first
 * component is a registry when it has a dot or a colon or is {@code localhost}; a reference without a tag or digest
 * means {@code latest}.
 *
 * @param registry the registry's host[:port] as written ({@code docker.io} for Docker Hub)
 * @param repository the repository path ({@code library/python})
 * @param tag the tag, or null when only a digest is given
 * @param digest {@code sha256:<64 hex>}, or null
 */
public record ImageRef(String registry, String repository, String tag, String digest) {
    public static final String DOCKER_HUB = "docker.io";
    private static final Pattern COMPONENT = Pattern.compile("[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*");
    private static final Pattern TAG = Pattern.compile("[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}");
    private static final Pattern DIGEST = Pattern.compile("sha256:[a-f0-9]{64}");
    private static final Pattern HOST = Pattern.compile("(?:[A-Za-z0-9-]+(?:\\.[A-Za-z0-9-]+)*|\\[[0-9a-fA-F:]+\\])(?::[0-9]{1,5})?");

    /** Parses {@code text}; throws {@link ImageException} ({@code INVALID_REFERENCE}) saying what is wrong. */
    public static ImageRef parse(String text) throws ImageException {
        if (text == null || text.isBlank() || text.length() > 512) {
            throw invalid(text, "expected name[:tag][@sha256:digest], e.g. python:3.12-slim");
        }
        String rest = text.strip();
        String digest = null;
        int at = rest.indexOf('@');
        if (at >= 0) {
            digest = rest.substring(at + 1);
            rest = rest.substring(0, at);
            if (!DIGEST.matcher(digest).matches()) {
                throw invalid(text, "the digest must be sha256: and 64 lowercase hex digits");
            }
        }
        String tag = null;
        int slash = rest.lastIndexOf('/');
        int colon = rest.lastIndexOf(':');
        if (colon > slash) {
            tag = rest.substring(colon + 1);
            rest = rest.substring(0, colon);
            if (!TAG.matcher(tag).matches()) {
                throw invalid(text, "a tag is letters, digits, '_', '.' and '-', at most 128");
            }
        }
        String registry = DOCKER_HUB;
        String path = rest;
        int first = rest.indexOf('/');
        if (first > 0) {
            String head = rest.substring(0, first);
            if (head.contains(".") || head.contains(":") || head.equals("localhost")) {
                if (!HOST.matcher(head).matches()) {
                    throw invalid(text, "'" + head + "' is not a registry host[:port]");
                }
                registry = head.toLowerCase(Locale.ROOT);
                path = rest.substring(first + 1);
            }
        }
        if (registry.equals("index.docker.io") || registry.equals("registry-1.docker.io")) {
            registry = DOCKER_HUB;
        }
        if (registry.equals(DOCKER_HUB) && !path.contains("/")) {
            path = "library/" + path;
        }
        for (String component : path.split("/", -1)) {
            if (!COMPONENT.matcher(component).matches()) {
                throw invalid(text, "repository names are lowercase letters, digits and separators ('" + component + "')");
            }
        }
        if (tag == null && digest == null) {
            tag = "latest";
        }
        return new ImageRef(registry, path, tag, digest);
    }

    private static ImageException invalid(String text, String why) {
        return new ImageException(ImageException.Failure.INVALID_REFERENCE,
                "invalid image reference '" + text + "': " + why);
    }

    /** {@code registry/repository}, e.g. {@code docker.io/library/python}. */
    public String name() {
        return registry + "/" + repository;
    }

    /** The full reference: {@code registry/repository[:tag][@digest]}. */
    public String canonical() {
        return name() + (tag == null ? "" : ":" + tag) + (digest == null ? "" : "@" + digest);
    }

    /** The tag, else the digest: what a manifest request asks for. */
    public String reference() {
        return digest != null ? digest : tag;
    }

    /** The host to speak HTTP to: Docker Hub's API host for {@code docker.io}. */
    public String apiHost() {
        return registry.equals(DOCKER_HUB) ? "registry-1.docker.io" : registry;
    }

    @Override
    public String toString() {
        return canonical();
    }
}
