package dev.crucible.server;

import dev.crucible.egress.policy.EgressPolicy;
import dev.crucible.server.access.Fairness;
import dev.crucible.server.access.WebOrigin;
import dev.crucible.server.services.Services;
import dev.crucible.session.spec.SessionConfig;
import dev.crucible.util.FairTurns;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * Settings of the HTTP service. Immutable; {@link #defaults()} documents each default.
 *
 * @param host the address to bind; anything but loopback needs at least one token
 * @param port the port; 0 picks a free one
 * @param tokens accepted bearer tokens; empty means no authentication (loopback only)
 * @param maxConcurrent how many executions run at once
 * @param maxQueued how many more may wait for a turn; beyond that, 429
 * @param maxBodyBytes the largest request body; beyond that, 413
 * @param shutdownGrace how long running executions get to finish on shutdown before they are killed
 * @param pool warm-pool sandboxes kept ready per language
 * @param sessions how sessions are kept, including the data directory they live in
 * @param cluster this replica's name and its peers when several serve together (sessions across replicas), or
 *     {@link Cluster#single()}
 * @param egress the widest network egress a request or session may ask for (a runtime's {@code egress_allow} adds to
 *     it); {@link EgressPolicy#none()}, the default, refuses every request that asks for network
 * @param allowedOrigins web origins besides the server's own whose pages may call it
 *     ({@code http(s)://HOST[:PORT]}, kept in canonical form with the port written); empty by default
 * @param previewListen where a listener of previews' own binds, {@code HOST:PORT} (port 0 picks a free one): each
 *     session's port gets an origin of its own there, {@code {port}-{session}.{previewDomain}}; null (the default)
 *     for none (previews are served on the API's origin only, fenced in)
 * @param previewDomain the domain under which preview hosts are named; {@code localhost} by default (browsers
 *     resolve every {@code *.localhost} to loopback), else a domain whose wildcard {@code *.DOMAIN} points here
 * @param fairness how turns are shared between tokens, and the session creates' own queue ({@link Fairness})
 * @param e2bTemplates E2B {@code templateID}s the operator names, each a runtime's language or an image reference
 *     (E2B's own {@code base} and {@code code-interpreter-v1} are Python sessions unless named here); empty by default
 */
public record ServerConfig(
        String host, int port, Set<String> tokens, int maxConcurrent, int maxQueued, long maxBodyBytes,
        Duration shutdownGrace, Map<String, Integer> pool, SessionConfig sessions, EgressPolicy egress,
        Cluster cluster, List<String> allowedOrigins, String previewListen, String previewDomain,
        Map<String, String> e2bTemplates, Fairness fairness) {

    /** {@code HOST:PORT}, an IPv6 address in brackets. */
    private static final Pattern LISTEN = Pattern.compile("(\\[[0-9A-Fa-f:.]+]|[^:\\[\\]\\s]+):([0-9]{1,5})");
    /** A DNS name in lower case: labels of letters, digits and inner dashes. */
    private static final Pattern DNS_NAME =
            Pattern.compile("[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*");

    /**
     * Replicas serving together: this one's name (session ids start with it) and where the others are.
     *
     * @param replica 1-63 lower-case letters, digits and dashes; null on a single node
     * @param peers the other replicas (this one may be listed too): base URLs ({@code http://10.0.0.7:8080}), or
     *     {@code dns:NAME:PORT}, every address of NAME (a Kubernetes headless Service) on PORT
     */
    public record Cluster(String replica, List<String> peers) {
        public Cluster {
            peers = peers == null ? List.of() : List.copyOf(peers);
            if (replica != null && !replica.matches("[a-z0-9][a-z0-9-]{0,62}")) {
                throw new IllegalArgumentException("the replica name must be 1-63 lower-case letters, digits and"
                        + " dashes (e.g. the pod name crucible-0): " + replica);
            }
            for (String peer : peers) {
                if (!peer.matches("(https?://[^/\\s]+|dns:[A-Za-z0-9.-]+:[0-9]{1,5})/?")) {
                    throw new IllegalArgumentException("a peer is http://HOST:PORT or dns:NAME:PORT, not '" + peer + "'");
                }
            }
        }

        public static Cluster single() {
            return new Cluster(null, List.of());
        }

        /** Whether replicas serve together (sessions are forwarded to their holder). */
        public boolean replicated() {
            return replica != null;
        }
    }

    /** @throws IllegalArgumentException for bad limits or a malformed allowed origin */
    public ServerConfig {
        egress = egress == null ? EgressPolicy.none() : egress;
        fairness = fairness == null ? Fairness.defaults() : fairness;
        cluster = cluster == null ? Cluster.single() : cluster;
        previewDomain = previewDomainFrom(previewDomain);
        listenAddress(previewListen);
        tokens = Set.copyOf(tokens);
        pool = Map.copyOf(pool);
        e2bTemplates = e2bTemplates == null ? Map.of() : Map.copyOf(e2bTemplates);
        allowedOrigins = allowedOrigins == null ? List.of()
                : allowedOrigins.stream().map(o -> WebOrigin.parse(o).toString()).distinct().toList();
        if (maxConcurrent < 1 || maxQueued < 0 || maxBodyBytes < 1024) {
            throw new IllegalArgumentException("maxConcurrent >= 1, maxQueued >= 0 and maxBodyBytes >= 1024");
        }
    }

    /** Python sessions a server keeps made ahead: a create that fits takes one at once (issue 33). */
    public static final int SPARES = 1;

    /**
     * Defaults, whatever the environment: 127.0.0.1:8080, no token, {@code 2 × cores} concurrent executions, 512
     * queued (shared fairly between tokens: {@link Fairness#defaults()}), 32 MiB bodies, 10 s shutdown grace, a warm pool of 2 Python and 1 JavaScript sandboxes, sessions under
     * {@link #defaultDataDir(Map)} of an empty environment with {@link #SPARES} spares.
     */
    public static ServerConfig defaults() {
        return new ServerConfig("127.0.0.1", 8080, Set.of(), 2 * Runtime.getRuntime().availableProcessors(), 512,
                32L * 1024 * 1024, Duration.ofSeconds(10), Map.of("python", 2, "javascript", 1),
                SessionConfig.defaults(defaultDataDir(Map.of())).withSpares(SPARES), EgressPolicy.none(),
                Cluster.single(), List.of(), null, "localhost", Map.of(), Fairness.defaults());
    }

    /**
     * The defaults with what the environment sets (read by the CLI, the edge): {@code CRUCIBLE_TOKENS}
     * (comma-separated bearer tokens), {@code CRUCIBLE_POOL} (e.g. {@code python=4,javascript=0}),
     * {@code CRUCIBLE_DATA_DIR}, {@code CRUCIBLE_EGRESS_ALLOW} (comma-separated {@code HOST[:PORT]} entries),
     * {@code CRUCIBLE_ALLOWED_ORIGINS} (comma-separated {@code http(s)://HOST[:PORT]}), {@code CRUCIBLE_PREVIEW_LISTEN}
     * ({@code HOST:PORT}) and {@code CRUCIBLE_PREVIEW_DOMAIN}.
     *
     * @throws IllegalArgumentException for a malformed {@code CRUCIBLE_POOL}, {@code CRUCIBLE_EGRESS_ALLOW},
     *     {@code CRUCIBLE_ALLOWED_ORIGINS}, {@code CRUCIBLE_PREVIEW_LISTEN} or {@code CRUCIBLE_PREVIEW_DOMAIN}
     */
    public static ServerConfig fromEnvironment(Map<String, String> env) {
        ServerConfig d = defaults();
        return new ServerConfig(d.host, d.port, tokensFrom(env.get("CRUCIBLE_TOKENS")), d.maxConcurrent, d.maxQueued,
                d.maxBodyBytes, d.shutdownGrace, poolFrom(env.get("CRUCIBLE_POOL"), d.pool),
                SessionConfig.defaults(defaultDataDir(env)).withSpares(SPARES),
                egressFrom(env.get("CRUCIBLE_EGRESS_ALLOW")),
                clusterFrom(env.get("CRUCIBLE_REPLICA"), env.get("CRUCIBLE_PEERS")),
                allowedOriginsFrom(env.get("CRUCIBLE_ALLOWED_ORIGINS")), blankToNull(env.get("CRUCIBLE_PREVIEW_LISTEN")),
                blankToNull(env.get("CRUCIBLE_PREVIEW_DOMAIN")), d.e2bTemplates, d.fairness);
    }

    /**
     * {@code CRUCIBLE_DATA_DIR} of {@code env}, else {@code /var/lib/crucible} for root (the sandboxes' uids must be
     * able to reach it, and root's home is closed to them), else {@code ~/.local/share/crucible}.
     */
    public static Path defaultDataDir(Map<String, String> env) {
        String dir = env.get("CRUCIBLE_DATA_DIR");
        if (dir != null && !dir.isBlank()) {
            return Path.of(dir);
        }
        boolean root = "root".equals(System.getProperty("user.name"));
        return root ? Path.of("/var/lib/crucible") : Path.of(System.getProperty("user.home"), ".local", "share", "crucible");
    }

    /**
     * The admission of stateless runs ({@link #maxConcurrent()} at once, {@link #maxQueued()} more waiting) and of
     * session creates, each shared between tokens as {@link #fairness()} says.
     */
    public Services.Turns turns() {
        FairTurns.Limits runs = fairness.runs(maxConcurrent, maxQueued);
        FairTurns.Limits creates = fairness.creates();
        if (tokens.isEmpty()) { // one owner for every request: a share kept for others would be kept for no one
            runs = new FairTurns.Limits(runs.running(), runs.queued(), runs.runningPerKey(), runs.queued());
            creates = new FairTurns.Limits(creates.running(), creates.queued(), creates.runningPerKey(),
                    creates.queued());
        } else if (tokens.size() > 1 && fairness.runningPerToken() == 0) {
            // tenants: one token's burst never holds every turn, so another's run starts at once, without a wait
            runs = new FairTurns.Limits(runs.running(), runs.queued(), Math.max(1, runs.running() - 1),
                    runs.queuedPerKey());
        }
        return new Services.Turns(runs, creates, fairness.createWaitMs());
    }

    public ServerConfig withFairness(Fairness value) {
        return new ServerConfig(host, port, tokens, maxConcurrent, maxQueued, maxBodyBytes, shutdownGrace, pool,
                sessions, egress, cluster, allowedOrigins, previewListen, previewDomain, e2bTemplates, value);
    }

    public ServerConfig withSessions(SessionConfig value) {
        return new ServerConfig(host, port, tokens, maxConcurrent, maxQueued, maxBodyBytes,
                shutdownGrace, pool, value, egress, cluster, allowedOrigins, previewListen, previewDomain, e2bTemplates, fairness);
    }

    public ServerConfig withDataDir(Path dir) {
        return withSessions(sessions.withDataDir(dir));
    }

    public ServerConfig withHost(String value) {
        return new ServerConfig(value, port, tokens, maxConcurrent, maxQueued, maxBodyBytes,
                shutdownGrace, pool, sessions, egress, cluster, allowedOrigins, previewListen, previewDomain, e2bTemplates, fairness);
    }

    public ServerConfig withPort(int value) {
        return new ServerConfig(host, value, tokens, maxConcurrent, maxQueued, maxBodyBytes,
                shutdownGrace, pool, sessions, egress, cluster, allowedOrigins, previewListen, previewDomain, e2bTemplates, fairness);
    }

    public ServerConfig withTokens(Set<String> value) {
        return new ServerConfig(host, port, value, maxConcurrent, maxQueued, maxBodyBytes,
                shutdownGrace, pool, sessions, egress, cluster, allowedOrigins, previewListen, previewDomain, e2bTemplates, fairness);
    }

    public ServerConfig withConcurrency(int running, int queued) {
        return new ServerConfig(host, port, tokens, running, queued, maxBodyBytes,
                shutdownGrace, pool, sessions, egress, cluster, allowedOrigins, previewListen, previewDomain, e2bTemplates, fairness);
    }

    public ServerConfig withShutdownGrace(Duration value) {
        return new ServerConfig(host, port, tokens, maxConcurrent, maxQueued, maxBodyBytes,
                value, pool, sessions, egress, cluster, allowedOrigins, previewListen, previewDomain, e2bTemplates, fairness);
    }

    public ServerConfig withPool(Map<String, Integer> value) {
        return new ServerConfig(host, port, tokens, maxConcurrent, maxQueued, maxBodyBytes,
                shutdownGrace, value, sessions, egress, cluster, allowedOrigins, previewListen, previewDomain, e2bTemplates, fairness);
    }

    public ServerConfig withEgress(EgressPolicy value) {
        return new ServerConfig(host, port, tokens, maxConcurrent, maxQueued, maxBodyBytes,
                shutdownGrace, pool, sessions, value, cluster, allowedOrigins, previewListen, previewDomain, e2bTemplates, fairness);
    }

    public ServerConfig withAllowedOrigins(List<String> value) {
        return new ServerConfig(host, port, tokens, maxConcurrent, maxQueued, maxBodyBytes,
                shutdownGrace, pool, sessions, egress, cluster, value, previewListen, previewDomain, e2bTemplates, fairness);
    }

    /** @throws IllegalArgumentException for a value that is not {@code HOST:PORT} */
    public ServerConfig withPreviewListen(String value) {
        return new ServerConfig(host, port, tokens, maxConcurrent, maxQueued, maxBodyBytes,
                shutdownGrace, pool, sessions, egress, cluster, allowedOrigins, value, previewDomain, e2bTemplates, fairness);
    }

    /** @throws IllegalArgumentException for a value that is not a DNS name */
    public ServerConfig withPreviewDomain(String value) {
        return new ServerConfig(host, port, tokens, maxConcurrent, maxQueued, maxBodyBytes,
                shutdownGrace, pool, sessions, egress, cluster, allowedOrigins, previewListen, value, e2bTemplates, fairness);
    }

    /** E2B template names mapped to what a sandbox of each runs: a runtime's language or an image of the store. */
    public ServerConfig withE2bTemplates(Map<String, String> value) {
        return new ServerConfig(host, port, tokens, maxConcurrent, maxQueued, maxBodyBytes,
                shutdownGrace, pool, sessions, egress, cluster, allowedOrigins, previewListen, previewDomain, value, fairness);
    }

    public ServerConfig withCluster(Cluster value) {
        return new ServerConfig(host, port, tokens, maxConcurrent, maxQueued, maxBodyBytes,
                shutdownGrace, pool, sessions, egress, value, allowedOrigins, previewListen, previewDomain, e2bTemplates, fairness);
    }

    /**
     * The cluster of {@code CRUCIBLE_REPLICA} (or {@code --replica}) and {@code CRUCIBLE_PEERS} (or {@code --peers},
     * comma-separated). Peers without a name: the host's name. Neither: a single node.
     *
     * @throws IllegalArgumentException for a bad name or peer
     */
    public static Cluster clusterFrom(String replica, String peers) {
        List<String> list = peers == null ? List.of() : Arrays.stream(peers.split(",")).map(String::strip)
                .filter(p -> !p.isEmpty()).toList();
        String name = replica == null || replica.isBlank() ? null : replica.strip();
        if (name == null && !list.isEmpty()) {
            name = hostName();
        }
        return new Cluster(name, list);
    }

    /** This host's name in a replica name's alphabet (a pod's name in Kubernetes). */
    static String hostName() {
        String name;
        try {
            name = InetAddress.getLocalHost().getHostName();
        } catch (UnknownHostException e) {
            name = "crucible";
        }
        name = name.toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9-]", "-").replaceAll("^-+", "");
        return name.isEmpty() ? "crucible" : name.substring(0, Math.min(63, name.length()));
    }

    /**
     * The egress list of {@code CRUCIBLE_EGRESS_ALLOW} or {@code --egress-allow}: comma-separated entries.
     *
     * @throws IllegalArgumentException naming the bad entry and the accepted forms
     */
    public static EgressPolicy egressFrom(String csv) {
        return csv == null ? EgressPolicy.none() : EgressPolicy.parse(csv);
    }

    /**
     * The origins of {@code CRUCIBLE_ALLOWED_ORIGINS} or {@code --allowed-origin}: comma-separated
     * {@code http(s)://HOST[:PORT]}, blanks dropped.
     *
     * @throws IllegalArgumentException naming the malformed origin and the form
     */
    public static List<String> allowedOriginsFrom(String csv) {
        return csv == null ? List.of() : Arrays.stream(csv.split(",")).map(String::strip).filter(s -> !s.isEmpty())
                .map(o -> WebOrigin.parse(o).toString()).toList();
    }

    /** Comma-separated tokens; blanks dropped. */
    public static Set<String> tokensFrom(String csv) {
        return csv == null ? Set.of() : Arrays.stream(csv.split(",")).map(String::strip).filter(s -> !s.isEmpty())
                .collect(Collectors.toUnmodifiableSet());
    }

    /**
     * {@code language=size,...}, e.g. {@code python=2,javascript=1}.
     *
     * @throws IllegalArgumentException naming the malformed entry
     */
    public static Map<String, Integer> poolFrom(String spec, Map<String, Integer> fallback) {
        if (spec == null || spec.isBlank()) {
            return fallback;
        }
        Map<String, Integer> sizes = new LinkedHashMap<>();
        for (String entry : spec.split(",")) {
            String[] kv = entry.strip().split("=");
            try {
                sizes.put(kv[0].strip(), Integer.parseInt(kv[1].strip()));
            } catch (RuntimeException e) {
                throw new IllegalArgumentException("pool entry '" + entry.strip() + "' is not language=size");
            }
        }
        return sizes;
    }

    /** Whether {@link #host()} is a loopback address. */
    public boolean loopback() {
        return loopback(host);
    }

    private static boolean loopback(String address) {
        try {
            return InetAddress.getByName(address).isLoopbackAddress();
        } catch (UnknownHostException e) {
            return false;
        }
    }

    /**
     * Why this config must not serve: a listener (the API's, or the previews') on an address other than loopback
     * while no token is set; null when it may.
     */
    public String openWithoutToken() {
        if (!tokens.isEmpty()) {
            return null;
        }
        InetSocketAddress previews = previewAddress();
        String open = !loopback() ? host : previews != null && !loopback(previews.getHostString()) ? previewListen : null;
        return open == null ? null : "refusing to listen on " + open + " without a token: set CRUCIBLE_TOKENS"
                + " (comma-separated bearer tokens) or bind 127.0.0.1";
    }

    /** Where the listener of previews' own binds ({@link #previewListen()}, unresolved); null when there is none. */
    public InetSocketAddress previewAddress() {
        return listenAddress(previewListen);
    }

    /** @throws IllegalArgumentException for a value that is not {@code HOST:PORT}, saying the form */
    private static InetSocketAddress listenAddress(String listen) {
        if (listen == null) {
            return null;
        }
        Matcher m = LISTEN.matcher(listen.strip());
        if (!m.matches() || Integer.parseInt(m.group(2)) > 65_535) {
            throw new IllegalArgumentException("a preview listener (--preview-listen, CRUCIBLE_PREVIEW_LISTEN) is"
                    + " HOST:PORT, e.g. 127.0.0.1:8081 or 0.0.0.0:8081, not '" + listen + "'");
        }
        String bind = m.group(1).startsWith("[") ? m.group(1).substring(1, m.group(1).length() - 1) : m.group(1);
        return InetSocketAddress.createUnresolved(bind, Integer.parseInt(m.group(2)));
    }

    /** The preview domain, lower-cased; {@code localhost} for null. */
    private static String previewDomainFrom(String domain) {
        if (domain == null) {
            return "localhost";
        }
        String lower = domain.strip().toLowerCase(Locale.ROOT);
        if (lower.length() > 200 || !DNS_NAME.matcher(lower).matches()) {
            throw new IllegalArgumentException("a preview domain (--preview-domain, CRUCIBLE_PREVIEW_DOMAIN) is a DNS"
                    + " name such as localhost or preview.example.com, not '" + domain + "'");
        }
        return lower;
    }

    private static String blankToNull(String value) {
        return value == null || value.isBlank() ? null : value;
    }
}
