package dev.crucible.server;

import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.URI;
import java.net.UnknownHostException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The other replicas, by name: the configured peers ({@code http://HOST:PORT}, or {@code dns:NAME:PORT} — every
 * address NAME resolves to, as a Kubernetes headless Service lists its ready pods) are asked for their name
 * ({@code GET /healthz}, field {@code replica}) when a name is not known yet, and again when a known one stops
 * answering (a restarted pod has a new address). Thread-safe.
 */
final class Peers {
    private static final Duration ASK = Duration.ofSeconds(2);

    private final List<String> configured;
    private final HttpClient client;
    private final JsonMapper json;
    private final Map<String, URI> byName = new ConcurrentHashMap<>();
    /** When the peers were last asked: at most once a second, so ids naming no replica cause no fan-out each. */
    private final java.util.concurrent.atomic.AtomicLong askedAt = new java.util.concurrent.atomic.AtomicLong(
            System.nanoTime() - REASK.toNanos());
    private static final Duration REASK = Duration.ofSeconds(1);

    Peers(List<String> configured, HttpClient client, JsonMapper json) {
        this.configured = List.copyOf(configured);
        this.client = client;
        this.json = json;
    }

    /** The base URL of replica {@code name}, asking the peers when it is not known; null when none answers to it. */
    URI urlOf(String name) {
        URI known = byName.get(name);
        if (known != null) {
            return known;
        }
        refresh();
        return byName.get(name);
    }

    /** Whether something accepts connections at {@code base}'s host and port (within a second). */
    static boolean reachable(URI base) {
        try (java.net.Socket socket = new java.net.Socket()) {
            socket.connect(new java.net.InetSocketAddress(base.getHost().replace("[", "").replace("]", ""),
                    base.getPort() < 0 ? 80 : base.getPort()), 1000);
            return true;
        } catch (java.io.IOException e) {
            return false;
        }
    }

    /** Drops what is known of {@code name} (it did not answer): the next {@link #urlOf} asks again. */
    void forget(String name) {
        byName.remove(name);
    }

    private void refresh() {
        long last = askedAt.get();
        long now = System.nanoTime();
        if (now - last < REASK.toNanos() || !askedAt.compareAndSet(last, now)) {
            return;
        }
        for (URI base : bases()) {
            try {
                HttpResponse<String> r = client.send(HttpRequest.newBuilder(base.resolve("/healthz")).timeout(ASK)
                        .GET().build(), HttpResponse.BodyHandlers.ofString());
                JsonNode replica = json.readTree(r.body()).get("replica");
                if (replica != null && replica.isString()) {
                    byName.put(replica.asString(), base);
                }
            } catch (java.io.IOException | RuntimeException e) {
                // a peer that does not answer now is asked again next time
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    /** The configured peers as base URLs, DNS names expanded to every address they have now. */
    List<URI> bases() {
        List<URI> out = new ArrayList<>();
        for (String peer : configured) {
            if (!peer.startsWith("dns:")) {
                out.add(URI.create(peer.endsWith("/") ? peer.substring(0, peer.length() - 1) : peer));
                continue;
            }
            String hostPort = peer.substring(4);
            int colon = hostPort.lastIndexOf(':');
            String host = hostPort.substring(0, colon);
            String port = hostPort.substring(colon + 1).replace("/", "");
            try {
                for (InetAddress address : InetAddress.getAllByName(host)) {
                    String literal = address instanceof Inet6Address ? "[" + address.getHostAddress() + "]"
                            : address.getHostAddress();
                    out.add(URI.create("http://" + literal + ":" + port));
                }
            } catch (UnknownHostException e) {
                // no ready replica behind the name right now
            }
        }
        return out;
    }
}
