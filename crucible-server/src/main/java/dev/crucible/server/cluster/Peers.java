package dev.crucible.server.cluster;

import java.io.IOException;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.UnknownHostException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The other replicas, by name: the configured peers ({@code http://HOST:PORT}, or {@code dns:NAME:PORT} — every
 * address NAME resolves to, as a Kubernetes headless Service lists its ready pods) are asked for their name
 * ({@code GET /healthz}, fields {@code replica} and {@code instance}) when a name is not known yet, when a known one
 * stops answering (a restarted pod has a new address), at start-up and every {@link #CHECK_EVERY} after it.
 *
 * <p>A peer that answers to this replica's own name from another process (another {@code instance}: replicas
 * started on one host without {@code --replica} all take the host name) is a misconfiguration that loses sessions —
 * both make ids with one prefix and each answers the other's 404 — so it is reported by {@link #conflict()} (and
 * logged once, as a warning) until a check finds no such peer. This replica listed among its own peers answers with
 * its own instance and is no conflict. Thread-safe.
 */
public final class Peers implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger("crucible.server");
    /** How long one peer gets to answer; a round asks every peer at once, so a round takes no longer. */
    private static final Duration ASK = Duration.ofSeconds(2);
    /** The least time between two rounds, so ids naming no replica cause no fan-out each. */
    private static final Duration REASK = Duration.ofSeconds(1);
    /** How often the peers are asked in the background. */
    static final Duration CHECK_EVERY = Duration.ofSeconds(5);

    private final List<String> configured;
    private final HttpClient client;
    private final JsonMapper json;
    private final String replica;
    private final String instance = UUID.randomUUID().toString();
    private final Map<String, URI> byName = new ConcurrentHashMap<>();
    private final AtomicLong askedAt = new AtomicLong(System.nanoTime() - REASK.toNanos());
    /** Rounds begun so far, the latest of them to have ended, and the lock callers waiting for a name take turns on. */
    private final AtomicInteger rounds = new AtomicInteger();
    private final AtomicInteger ended = new AtomicInteger();
    private final Object waiting = new Object();
    private volatile String conflict;
    private volatile ScheduledExecutorService checks;

    /**
     * @param configured the peers as configured ({@code ServerConfig.Cluster.peers()})
     * @param replica this replica's name; null on a single node (nothing is checked)
     */
    public Peers(List<String> configured, String replica, HttpClient client, JsonMapper json) {
        this.configured = List.copyOf(configured);
        this.replica = replica;
        this.client = client;
        this.json = json;
    }

    /** This process's id among replicas ({@code /healthz} field {@code instance}): random, fixed for its life. */
    public String instance() {
        return instance;
    }

    /**
     * Why this replica may not serve sessions: one sentence naming the peer that answers to this replica's name and
     * how to fix it; null when no check found such a peer (always null on a single node). Never blocks.
     */
    public String conflict() {
        return conflict;
    }

    /** Starts the background checks (the first at once) when this replica has a name and peers; returns at once. */
    public void start() {
        if (replica == null || configured.isEmpty()) {
            return;
        }
        checks = Executors.newSingleThreadScheduledExecutor(Thread.ofPlatform().name("crucible-peers").daemon()
                .factory());
        checks.scheduleWithFixedDelay(() -> {
            try {
                refresh();
            } catch (RuntimeException e) { // a failed round must not end the checks (the executor would drop them)
                LOG.log(System.Logger.Level.DEBUG, "asking the peers failed", e);
            }
        }, 0, CHECK_EVERY.toMillis(), TimeUnit.MILLISECONDS);
    }

    /** Stops the background checks. */
    @Override
    public void close() {
        if (checks != null) {
            checks.shutdownNow();
        }
    }

    /**
     * The base URL of replica {@code name}, asking the peers when it is not known; null when none answers to it. A round
     * is asked for this call, after the caller came: when the last was under a second ago it waits for the next (a
     * round that found no answer, just after a start, would otherwise leave a session that lives "lost"), and callers
     * that came while one waited take its answer rather than ask again.
     */
    URI urlOf(String name) {
        URI known = byName.get(name);
        if (known != null) {
            return known;
        }
        int seen = rounds.get();
        synchronized (waiting) {
            known = byName.get(name);
            if (known != null || ended.get() > seen) {
                return known; // a round begun after this call came has ended: its answer stands
            }
            long wait;
            while ((wait = askedAt.get() + REASK.toNanos() - System.nanoTime()) > 0) {
                LockSupport.parkNanos(wait);
                if (Thread.currentThread().isInterrupted()) {
                    return null;
                }
            }
            refresh();
        }
        return byName.get(name);
    }

    /** Whether something accepts connections at {@code base}'s host and port (within a second). */
    static boolean reachable(URI base) {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(base.getHost().replace("[", "").replace("]", ""),
                    base.getPort() < 0 ? 80 : base.getPort()), 1000);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /** Drops what is known of {@code name} (it did not answer): the next {@link #urlOf} asks again. */
    void forget(String name) {
        byName.remove(name);
    }

    /** One round (at most one a second): asks every peer at once, learns their names, notes a name conflict. */
    private void refresh() {
        long last = askedAt.get();
        long now = System.nanoTime();
        if (now - last < REASK.toNanos() || !askedAt.compareAndSet(last, now)) {
            return;
        }
        int round = rounds.incrementAndGet();
        try {
            askAll();
        } finally {
            ended.accumulateAndGet(round, Math::max);
        }
    }

    /** Every peer asked at once: their names learned, a name conflict noted. */
    private void askAll() {
        List<URI> bases = bases();
        List<Future<Answer>> answers = new ArrayList<>();
        URI clash = null;
        try (ExecutorService asking = Executors.newVirtualThreadPerTaskExecutor()) {
            for (URI base : bases) {
                answers.add(asking.submit(() -> ask(base)));
            }
            for (int i = 0; i < bases.size(); i++) {
                Answer a = answers.get(i).get();
                if (a == null) {
                    continue; // a peer that does not answer now is asked again next time
                }
                if (!a.replica().equals(replica)) {
                    byName.put(a.replica(), bases.get(i));
                } else if (!instance.equals(a.instance()) && clash == null) {
                    clash = bases.get(i);
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return;
        } catch (ExecutionException e) {
            return; // ask() answers null for every failure it expects: a bug, but no reason to stop checking
        }
        noteConflict(clash);
    }

    /** What a peer said of itself. */
    private record Answer(String replica, String instance) {}

    /** Peer {@code base}'s name and instance from its {@code /healthz}, whatever its status; null without one. */
    private Answer ask(URI base) throws InterruptedException {
        try {
            HttpResponse<String> r = client.send(HttpRequest.newBuilder(base.resolve("/healthz")).timeout(ASK)
                    .GET().build(), HttpResponse.BodyHandlers.ofString());
            JsonNode body = json.readTree(r.body());
            JsonNode name = body.get("replica");
            JsonNode id = body.get("instance");
            return name == null || !name.isString() ? null
                    : new Answer(name.asString(), id != null && id.isString() ? id.asString() : null);
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    /** The state after a round, logged once when it changes. */
    private synchronized void noteConflict(URI clash) {
        String before = conflict;
        conflict = clash == null ? null : "the peer at " + clash + " answers to this replica's name '" + replica
                + "' too, so their session ids collide and each answers the other's sessions 404: give each replica"
                + " a distinct --replica NAME (env CRUCIBLE_REPLICA; replicas on one host without it all take the"
                + " host name); sessions are refused until then";
        if (before == null && conflict != null) {
            LOG.log(System.Logger.Level.WARNING, conflict);
        } else if (before != null && conflict == null) {
            LOG.log(System.Logger.Level.INFO, "no peer answers to this replica's name '" + replica + "' any more:"
                    + " sessions are served again");
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
