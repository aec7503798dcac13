package dev.crucible.server.e2b;

import com.fasterxml.jackson.annotation.JsonProperty;
import dev.crucible.error.RequestException;
import dev.crucible.session.SessionManager;
import dev.crucible.session.spec.SessionLimits;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.time.Clock;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.UnaryOperator;
import tools.jackson.databind.json.JsonMapper;

/**
 * What E2B's control plane knows of a sandbox that its Crucible session does not: the template it was asked for,
 * metadata, sandbox-wide variables, and its end ({@code endAt}: E2B's timeout is a deadline from its last {@code
 * setTimeout}, not an idle timeout). One small file per sandbox under {@code <data-dir>/e2b}, so a restart keeps them;
 * a sandbox past its end is deleted, session and all, within a second. Thread-safe.
 */
final class E2bSandboxes implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger("crucible.e2b");
    private static final SecureRandom RANDOM = new SecureRandom();

    /**
     * One sandbox; its id, language and limits are its session's (kept here: asking the session costs a scan).
     * {@code trafficNonce} is the life its traffic tokens are bound to: random for each sandbox, replaced when they are
     * rotated, gone with its record. {@code autoResume} (E2B's {@code lifecycle.autoResume}, with {@code autoPause}): a
     * paused one is resumed by traffic, its deadline then {@code timeoutS} (the create's) from then.
     */
    record Sandbox(
            @JsonProperty("id") String id,
            @JsonProperty("owner") String owner,
            @JsonProperty("template_id") String templateId,
            @JsonProperty("language") String language,
            @JsonProperty("limits") SessionLimits limits,
            @JsonProperty("metadata") Map<String, String> metadata,
            @JsonProperty("env_vars") Map<String, String> envVars,
            @JsonProperty("home") String home,
            @JsonProperty("started_at_ms") long startedAtMs,
            @JsonProperty("end_at_ms") long endAtMs,
            @JsonProperty("auto_pause") boolean autoPause,
            @JsonProperty("traffic_nonce") String trafficNonce,
            @JsonProperty("auto_resume") boolean autoResume,
            @JsonProperty("timeout_s") long timeoutS) {
        Sandbox until(long end) {
            return new Sandbox(id, owner, templateId, language, limits, metadata, envVars, home, startedAtMs, end,
                    autoPause, trafficNonce, autoResume, timeoutS);
        }

        /** This sandbox with a new traffic nonce: every traffic token made before is refused. */
        Sandbox rotated() {
            return new Sandbox(id, owner, templateId, language, limits, metadata, envVars, home, startedAtMs, endAtMs,
                    autoPause, newNonce(), autoResume, timeoutS);
        }
    }

    /** 128 random bits as 32 hex digits. */
    static String newNonce() {
        byte[] b = new byte[16];
        RANDOM.nextBytes(b);
        return HexFormat.of().formatHex(b);
    }

    private final Path dir;
    private final JsonMapper json;
    private final SessionManager sessions;
    private final Clock clock;
    private final Map<String, Sandbox> byId = new ConcurrentHashMap<>();
    private final ScheduledExecutorService reaper;
    private final Consumer<String> gone;

    /** @param gone told the id of each sandbox forgotten (its contexts go with it) */
    E2bSandboxes(Path dataDir, JsonMapper json, SessionManager sessions, Clock clock,
            Consumer<String> gone) throws IOException {
        this.gone = gone;
        this.dir = Files.createDirectories(dataDir.resolve("e2b"));
        this.json = json;
        this.sessions = sessions;
        this.clock = clock;
        try (var files = Files.list(dir)) {
            for (Path f : files.filter(p -> p.getFileName().toString().endsWith(".json")).toList()) {
                try {
                    Sandbox s = json.readValue(f.toFile(), Sandbox.class);
                    byId.put(s.id(), s.trafficNonce() == null ? s.rotated() : s); // kept by an earlier version
                } catch (RuntimeException e) {
                    LOG.log(System.Logger.Level.WARNING, "skipped an unreadable E2B sandbox record " + f + ": " + e);
                }
            }
        }
        this.reaper = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "crucible-e2b-reaper");
            t.setDaemon(true);
            return t;
        });
        reaper.scheduleWithFixedDelay(this::reap, 1, 1, TimeUnit.SECONDS);
    }

    /** Keeps {@code sandbox}, a new one (replacing what was kept for its id). */
    synchronized void put(Sandbox sandbox) throws IOException {
        write(sandbox);
        byId.put(sandbox.id(), sandbox);
    }

    /**
     * Changes what is kept for {@code id} in one step, against the record as it is now (never a copy read earlier), so
     * two changes racing (a rotation of its traffic tokens and a timeout set at once) both hold; empty when it is gone
     * (forgotten meanwhile: a change never brings it back).
     */
    synchronized Optional<Sandbox> update(String id, UnaryOperator<Sandbox> change)
            throws IOException {
        Sandbox now = byId.get(id);
        if (now == null) {
            return Optional.empty();
        }
        Sandbox changed = change.apply(now);
        write(changed);
        byId.put(id, changed);
        return Optional.of(changed);
    }

    private void write(Sandbox sandbox) throws IOException {
        Path temp = dir.resolve(sandbox.id() + ".json.tmp");
        Files.write(temp, json.writeValueAsBytes(sandbox));
        Files.move(temp, dir.resolve(sandbox.id() + ".json"), StandardCopyOption.ATOMIC_MOVE,
                StandardCopyOption.REPLACE_EXISTING);
    }

    /** The sandbox {@code id} of {@code owner} whose session still lives; empty for anyone else's or a gone one. */
    Optional<Sandbox> get(String owner, String id) {
        Sandbox s = known(id);
        if (s == null || !s.owner().equals(owner)) {
            return Optional.empty();
        }
        return alive(s) ? Optional.of(s) : Optional.empty();
    }

    /** The sandbox {@code id} whatever its owner (the planes that authenticate by its access token). */
    Optional<Sandbox> get(String id) {
        Sandbox s = known(id);
        return s != null && alive(s) ? Optional.of(s) : Optional.empty();
    }

    /** The live sandbox whose access token is {@code token} (for SDKs that leave {@code E2b-Sandbox-Id} out). */
    Optional<Sandbox> byToken(Function<String, String> tokenOf, String token) {
        byte[] given = token.strip().getBytes(StandardCharsets.US_ASCII);
        return byId.values().stream().filter(s -> MessageDigest.isEqual(
                tokenOf.apply(s.id()).getBytes(StandardCharsets.US_ASCII), given))
                .findFirst().filter(this::alive);
    }

    /** {@code owner}'s live sandboxes, oldest first. */
    List<Sandbox> list(String owner) {
        return byId.values().stream().filter(s -> s.owner().equals(owner) && alive(s))
                .sorted(Comparator.comparingLong(Sandbox::startedAtMs).thenComparing(Sandbox::id)).toList();
    }

    /** Forgets {@code id} (its session is deleted by the caller). */
    synchronized void forget(String id) {
        byId.remove(id);
        gone.accept(id);
        try {
            Files.deleteIfExists(dir.resolve(id + ".json"));
        } catch (IOException e) {
            LOG.log(System.Logger.Level.WARNING, "cannot remove the E2B record of " + id + ": " + e);
        }
    }

    /** Deletes the sandbox's session and forgets it; false when it was gone already. */
    boolean kill(Sandbox s) {
        boolean live = alive(s);
        try {
            if (live) {
                sessions.delete(s.owner(), s.id());
            }
        } catch (RequestException e) {
            live = false; // gone meanwhile
        }
        forget(s.id());
        return live;
    }

    /**
     * What is kept for {@code id}: in memory, or read from its record when this replica holds its session but has not
     * read it (a sandbox made on another replica, taken over here when that one died); null for none.
     */
    private Sandbox known(String id) {
        if (id == null) {
            return null;
        }
        Sandbox s = byId.get(id);
        if (s != null || !SessionManager.wellFormed(id) || !sessions.holds(id)) {
            return s;
        }
        synchronized (this) {
            Path record = dir.resolve(id + ".json");
            try {
                if (byId.get(id) == null && Files.isRegularFile(record)) {
                    byId.put(id, json.readValue(record.toFile(), Sandbox.class));
                }
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "skipped an unreadable E2B sandbox record " + record + ": " + e);
            }
            return byId.get(id);
        }
    }

    private boolean alive(Sandbox s) {
        if (sessions.holds(s.id())) {
            return true;
        }
        String holder = sessions.replica() == null ? null : sessions.ownerOf(s.id());
        if (holder != null && !holder.equals(sessions.replica())) {
            byId.remove(s.id()); // another replica's, read at start from a shared data directory: its record stays
            return false;
        }
        forget(s.id()); // its session went its own way (idle, lifetime, deleted through /v1)
        return false;
    }

    /** Whether the sandbox's session is paused now. */
    boolean paused(Sandbox s) {
        try {
            return sessions.pauses(s.owner(), s.id()).paused();
        } catch (RequestException e) {
            return false;
        }
    }

    private void reap() {
        long now = clock.millis();
        for (Sandbox s : byId.values()) {
            if (now >= s.endAtMs() && !paused(s)) { // E2B keeps a paused sandbox past its timeout
                try {
                    if (s.autoPause() && alive(s)) { // created with lifecycle {onTimeout: "pause"}
                        sessions.pauses(s.owner(), s.id()).pause();
                        continue;
                    }
                    kill(s);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                } catch (RuntimeException e) {
                    LOG.log(System.Logger.Level.WARNING, "cannot end E2B sandbox " + s.id() + " at its timeout: " + e);
                }
            }
        }
    }

    @Override
    public void close() {
        reaper.shutdownNow();
    }
}
