package dev.crucible.image.registry;

import dev.crucible.image.spec.Digests;
import dev.crucible.image.spec.ImageException;
import dev.crucible.image.spec.ImageFormats;
import dev.crucible.image.spec.ImageRef;
import java.io.ByteArrayOutputStream;
import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.UnknownHostException;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpHeaders;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.channels.UnresolvedAddressException;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;
import javax.net.ssl.SSLException;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;

/**
 * HTTP to one repository of one registry for one pull (OCI Distribution spec): https, or plain HTTP only to a loopback
 * or insecure-listed registry; a 401 answered by {@link RegistryAuth} and its token kept for the rest of the pull;
 * redirects followed by hand, the Authorization header going only to the registry's own scheme, host and port (a blob
 * redirected to storage elsewhere is fetched without it); statuses mapped to {@link ImageException} failures. Built on
 * the JDK's HttpClient: jib-core's registry client is not a public API and brings Google's HTTP client and Guava.
 * Not thread-safe: one pull, one thread; close it to release its connections.
 */
final class RegistryClient implements AutoCloseable {
    static final String USER_AGENT = "crucible";
    private static final int MAX_REDIRECTS = 5;
    private static final Set<Integer> REDIRECTS = Set.of(301, 302, 303, 307, 308);
    private static final Pattern LOOPBACK_V4 = Pattern.compile("127\\.[0-9]{1,3}\\.[0-9]{1,3}\\.[0-9]{1,3}");

    /** A 200, 206 or 416 answer; its body is read-timed and must be closed. */
    record Response(int status, HttpHeaders headers, InputStream body) implements Closeable {
        @Override
        public void close() throws IOException {
            body.close();
        }
    }

    private final ImageRef ref;
    private final ImagePuller.Options options;
    private final HttpClient http;
    private final URI base;
    private final RegistryAuth auth;
    /** The Authorization header the registry last asked for; layers fetched at once share it. */
    private volatile String authorization;

    RegistryClient(ImageRef ref, ImagePuller.Options options) {
        this(ref, options, false);
    }

    /** As {@link #RegistryClient(ImageRef, ImagePuller.Options)}; {@code push}: its tokens may push too. */
    RegistryClient(ImageRef ref, ImagePuller.Options options, boolean push) {
        this.ref = ref;
        this.options = options;
        this.base = base(ref, options.insecureRegistries());
        this.http = HttpClient.newBuilder().connectTimeout(options.timeout())
                .followRedirects(HttpClient.Redirect.NEVER).build();
        this.auth = new RegistryAuth(ref, options, this::send, push ? "pull,push" : "pull");
    }

    /**
     * Whether plain HTTP may be spoken to {@code authority} (host[:port]): {@code localhost}, an IPv4 literal in
     * 127.0.0.0/8 or {@code [::1]}, or one listed in {@code insecure}. A name that merely starts with {@code 127.}
     * ({@code 127.0.0.1.nip.io}) is not loopback: DNS decides where it goes.
     */
    static boolean plainHttpAllowed(String authority, Set<String> insecure) {
        String lower = authority.toLowerCase(Locale.ROOT);
        String host = lower.replaceFirst(":[0-9]+$", "");
        return host.equals("localhost") || host.equals("[::1]") || LOOPBACK_V4.matcher(host).matches()
                || insecure.contains(lower);
    }

    /** {@code scheme://apiHost/v2/REPOSITORY/}: https unless plain HTTP is allowed for the registry. */
    static URI base(ImageRef ref, Set<String> insecure) {
        boolean plain = plainHttpAllowed(ref.apiHost(), insecure) || insecure.contains(ref.registry());
        return URI.create((plain ? "http" : "https") + "://" + ref.apiHost() + "/v2/" + ref.repository() + "/");
    }

    /**
     * GETs {@code path} under the repository ({@code manifests/latest}, {@code blobs/sha256:…}) with extra headers,
     * authenticating and following redirects.
     *
     * @param notFound the message of the NOT_FOUND a 404 gives
     * @throws ImageException UNAUTHORIZED (401/403 after authenticating), NOT_FOUND (404), UNREACHABLE (the network,
     *     TLS, timeouts, 5xx and other refusals)
     */
    Response get(String path, Map<String, String> headers, String notFound) throws IOException {
        URI uri = base.resolve(path);
        boolean authenticated = false;
        int redirects = 0;
        while (true) {
            boolean registry = sameOrigin(uri);
            HttpResponse<InputStream> response = send(request(uri, headers, registry ? authorization : null));
            int status = response.statusCode();
            if (status == 401 && registry && !authenticated) {
                response.body().close();
                authorization = auth.authorize(response.headers().allValues("WWW-Authenticate"));
                authenticated = true;
            } else if (REDIRECTS.contains(status)) {
                String location = response.headers().firstValue("Location").orElse(null);
                response.body().close();
                if (location == null || ++redirects > MAX_REDIRECTS) {
                    throw new ImageException(ImageException.Failure.UNREACHABLE, "registry " + uri.getRawAuthority()
                            + " unreachable: HTTP " + status + (location == null ? " without a Location" : " loop"));
                }
                uri = redirect(uri, location);
            } else if (status == 200 || status == 206 || status == 416) {
                return new Response(status, response.headers(), new ReadTimeout(response.body(), options.timeout()));
            } else {
                throw failure(uri, status, response, notFound);
            }
        }
    }

    /** {@code path} under the repository ({@code blobs/uploads/}, {@code manifests/1.0}). */
    URI resolve(String path) {
        return base.resolve(path);
    }

    /**
     * Sends {@code method} to {@code uri} with {@code body}, authenticating once (the Authorization header only to the
     * registry's own origin; no redirect is followed); returns the answer when its status is one of {@code ok}, its
     * body the caller's to close.
     *
     * @throws ImageException as {@link #get}
     */
    HttpResponse<InputStream> write(String method, URI uri, Map<String, String> headers,
            HttpRequest.BodyPublisher body, Set<Integer> ok, String notFound) throws IOException {
        boolean authenticated = false;
        while (true) {
            boolean registry = sameOrigin(uri);
            HttpRequest.Builder request = HttpRequest.newBuilder(uri).method(method, body).timeout(options.timeout())
                    .header("User-Agent", USER_AGENT).version(HttpClient.Version.HTTP_1_1);
            headers.forEach(request::header);
            if (registry && authorization != null) {
                request.header("Authorization", authorization);
            }
            HttpResponse<InputStream> response = send(request.build());
            int status = response.statusCode();
            if (status == 401 && registry && !authenticated) {
                response.body().close();
                authorization = auth.authorize(response.headers().allValues("WWW-Authenticate"));
                authenticated = true;
            } else if (ok.contains(status)) {
                return response;
            } else {
                throw failure(uri, status, response, notFound);
            }
        }
    }

    /** Where a redirect goes: https, or plain HTTP only where plain HTTP is allowed (never a downgrade elsewhere). */
    private URI redirect(URI from, String location) throws ImageException {
        URI to;
        try {
            to = from.resolve(location.strip());
        } catch (IllegalArgumentException e) {
            to = null;
        }
        boolean https = to != null && "https".equalsIgnoreCase(to.getScheme()) && to.getRawAuthority() != null;
        boolean http = to != null && "http".equalsIgnoreCase(to.getScheme()) && to.getRawAuthority() != null;
        if (https || http && plainHttpAllowed(to.getRawAuthority(), options.insecureRegistries())) {
            return to;
        }
        throw new ImageException(ImageException.Failure.UNREACHABLE, "registry " + from.getRawAuthority()
                + " redirected to " + Digests.clip(location) + ", which Crucible does not follow: only https, or plain"
                + " HTTP to a loopback or insecure-listed host");
    }

    /** The registry's own scheme, host and port: the only place the Authorization header goes. */
    private boolean sameOrigin(URI uri) {
        return base.getScheme().equalsIgnoreCase(uri.getScheme())
                && base.getRawAuthority().equalsIgnoreCase(uri.getRawAuthority());
    }

    private HttpRequest request(URI uri, Map<String, String> headers, String authorizationHeader) {
        HttpRequest.Builder request = HttpRequest.newBuilder(uri).GET().timeout(options.timeout())
                .header("User-Agent", USER_AGENT);
        if (uri.getScheme().equals("http")) {
            request.version(HttpClient.Version.HTTP_1_1); // no h2c upgrade dance with plain-HTTP registries
        }
        headers.forEach(request::header);
        if (authorizationHeader != null) {
            request.header("Authorization", authorizationHeader);
        }
        return request.build();
    }

    /** Sends a request; network failures become UNREACHABLE naming the host. */
    HttpResponse<InputStream> send(HttpRequest request) throws IOException {
        try {
            return http.send(request, HttpResponse.BodyHandlers.ofInputStream());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted while pulling " + ref);
        } catch (IOException e) {
            throw unreachable(request.uri().getRawAuthority(), e, options);
        }
    }

    /** UNREACHABLE for a network failure talking to {@code authority}, in words. */
    static ImageException unreachable(String authority, IOException e, ImagePuller.Options options) {
        String seconds = ReadTimeout.seconds(options.timeout().toNanos());
        String why = switch (e) {
            case SSLException tls -> "TLS failed (" + tls.getMessage() + "); if it serves plain HTTP, name it as an"
                    + " insecure registry (" + authority + ")";
            case HttpConnectTimeoutException t -> "no connection within " + seconds + " s";
            case HttpTimeoutException t -> t.getMessage() != null && t.getMessage().startsWith("no data")
                    ? t.getMessage() : "no answer within " + seconds + " s";
            case ConnectException c -> "cannot connect (" + (deepest(c).equals("ClosedChannelException")
                    ? "connection refused: is it running, on this port?" : deepest(c)) + ")";
            default -> deepest(e);
        };
        return new ImageException(ImageException.Failure.UNREACHABLE, "registry " + authority + " unreachable: " + why,
                e);
    }

    /** The innermost cause in words: the JDK wraps "Connection refused" and unresolvable names in bare exceptions. */
    private static String deepest(Throwable e) {
        Throwable inner = e;
        while (inner.getCause() != null && inner.getCause() != inner) {
            inner = inner.getCause();
        }
        if (inner instanceof UnresolvedAddressException || inner instanceof UnknownHostException) {
            return "its name does not resolve";
        }
        return inner.getMessage() != null ? inner.getMessage() : inner.getClass().getSimpleName();
    }

    private ImageException failure(URI uri, int status, HttpResponse<InputStream> response, String notFound)
            throws IOException {
        String detail = errorDetail(response);
        String host = uri.getRawAuthority();
        return switch (status) {
            case 401, 403 -> new ImageException(ImageException.Failure.UNAUTHORIZED, "registry " + ref.registry()
                    + " refused access to " + ref.repository() + " (HTTP " + status + detail + "): "
                    + auth.howToLogIn());
            case 404 -> new ImageException(ImageException.Failure.NOT_FOUND, notFound + " (" + host + " answered 404"
                    + detail + ")");
            case 429 -> new ImageException(ImageException.Failure.UNREACHABLE, "registry " + host + " refused: too"
                    + " many requests (HTTP 429" + detail + "); wait and pull again, or log in for a higher limit");
            default -> new ImageException(ImageException.Failure.UNREACHABLE, "registry " + host
                    + (status >= 500 ? " unreachable" : " refused the request") + ": HTTP " + status + detail);
        };
    }

    /** ": CODE message" from the spec's {@code {"errors": [{"code", "message"}]}}, else the body's first line. */
    private String errorDetail(HttpResponse<InputStream> response) throws IOException {
        byte[] body;
        try (InputStream in = new ReadTimeout(response.body(), options.timeout())) {
            body = readAtMost(in, 4096);
        } catch (IOException e) {
            return "";
        }
        try {
            JsonNode json = ImageFormats.JSON.readTree(body);
            JsonNode error = json == null ? null : json.path("errors").path(0);
            String text = error == null ? "" : (error.path("code").asString("") + " "
                    + error.path("message").asString("")).strip();
            if (!text.isEmpty()) {
                return ": " + Digests.clip(text);
            }
        } catch (JacksonException | IllegalArgumentException e) {
            // not the spec's error JSON
        }
        String line = new String(body, StandardCharsets.UTF_8).lines().findFirst().orElse("").strip();
        return line.isEmpty() ? "" : ": " + Digests.clip(line);
    }

    /** Up to {@code max} + 1 bytes of {@code in}: more than {@code max} means it was longer. */
    static byte[] readAtMost(InputStream in, int max) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] buffer = new byte[8192];
        while (out.size() <= max) {
            int n = in.read(buffer, 0, Math.min(buffer.length, max + 1 - out.size()));
            if (n < 0) {
                break;
            }
            out.write(buffer, 0, n);
        }
        return out.toByteArray();
    }

    /** Drops every connection at once: a body left unread (a failed pull) must not keep the client waiting. */
    @Override
    public void close() {
        http.shutdownNow();
    }
}
