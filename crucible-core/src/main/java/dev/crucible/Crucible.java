package dev.crucible;

import dev.crucible.error.RequestException;
import dev.crucible.exec.Executor;
import dev.crucible.image.Images;
import dev.crucible.pool.WarmPool;
import dev.crucible.runtime.LanguageRuntime;
import dev.crucible.runtime.RuntimeRegistry;
import dev.crucible.sandbox.Sandbox;
import dev.crucible.sandbox.SandboxConfig;
import dev.crucible.sandbox.bwrap.BwrapSandbox;
import dev.crucible.util.Once;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * The composition root: wires the sandbox launcher, the runtime registry and the executor by hand.
 *
 * <pre>{@code
 * try (Crucible crucible = Crucible.start(SandboxConfig.defaults(), null)) {
 *     ExecuteResult r = crucible.executor().execute(ExecuteRequest.of("python", "print(1)"));
 * }
 * }</pre>
 */
public final class Crucible implements AutoCloseable {
    private final Sandbox sandbox;
    private final RuntimeRegistry runtimes;
    private final Executor executor;
    private final int slots;
    private WarmPool pool;

    private Crucible(Sandbox sandbox, RuntimeRegistry runtimes, int slots) {
        this.sandbox = sandbox;
        this.slots = slots;
        this.runtimes = runtimes;
        this.executor = new Executor(sandbox, runtimes, Path.of(sandbox.host().workRoot().toString(), "programs"));
    }

    /**
     * Checks the host, prepares the sandbox launcher and loads the runtimes.
     *
     * @param runtimesFile a user runtimes TOML file, or null for the built-in runtimes only
     * @throws dev.crucible.sandbox.SandboxUnavailableException when the host cannot run sandboxes
     * @throws IllegalArgumentException when the runtimes file is unreadable or invalid
     */
    public static Crucible start(SandboxConfig config, Path runtimesFile) {
        return start(config, runtimesFile, Images.none());
    }

    /**
     * Checks the host, prepares the sandbox launcher and loads the runtimes, which may run in {@code images}; the
     * engine closes {@code images} when it closes.
     *
     * @param runtimesFile a user runtimes TOML file, or null for the built-in runtimes only
     * @throws dev.crucible.sandbox.SandboxUnavailableException when the host cannot run sandboxes
     * @throws IllegalArgumentException when the runtimes file is unreadable or invalid
     */
    public static Crucible start(SandboxConfig config, Path runtimesFile, Images images) {
        // The two halves share nothing and each costs tens of milliseconds of a `crucible run` (the TOML mapper's
        // classes; the launcher's set-up and self-test): on two cores, doing them side by side shortens the wait.
        Once<RuntimeRegistry> loading = new Once<>(() -> RuntimeRegistry.load(runtimesFile, images,
                config.isolation()));
        loading.startInBackground("crucible-runtimes");
        Sandbox sandbox = null;
        RuntimeException sandboxFailure = null;
        try {
            sandbox = BwrapSandbox.create(config);
        } catch (RuntimeException e) {
            sandboxFailure = e;
        }
        RuntimeRegistry runtimes;
        try {
            runtimes = loading.get();
        } catch (RuntimeException e) {
            if (sandbox != null) {
                sandbox.close();
            }
            throw e; // a bad runtimes file is reported first, as when the two ran one after the other
        }
        if (sandboxFailure != null) {
            throw sandboxFailure;
        }
        return new Crucible(sandbox, runtimes, config.slots());
    }

    /**
     * Starts a warm pool: for each language named, that many sandboxes kept ready (unknown or not poolable
     * languages are ignored; {@code LANGUAGE@IMAGE} keeps sandboxes of a language in an image of the store). Replaces any pool started before. A waiting pooled sandbox holds a slot, so the pool
     * is cut to at most half the slots (the rest serve cold runs and refills): a pool as large as the slots would
     * leave a cold run waiting for a slot forever.
     *
     * @return the pool, also used by {@link #executor()} from now on
     */
    public synchronized WarmPool startPool(Map<String, Integer> sizes) {
        Map<LanguageRuntime, Integer> byRuntime = new LinkedHashMap<>();
        sizes.forEach((key, size) -> pooled(key).ifPresent(r -> byRuntime.put(r, Math.max(0, size))));
        int total = byRuntime.values().stream().mapToInt(Integer::intValue).sum();
        int room = Math.max(1, slots / 2);
        if (total > room) {
            System.getLogger("crucible.pool").log(System.Logger.Level.WARNING, "a warm pool of " + total
                    + " sandboxes would hold too many of the " + slots + " slots; keeping " + room);
            byRuntime.replaceAll((r, size) -> size * room / total);
        }
        WarmPool old = pool;
        pool = new WarmPool(sandbox, byRuntime);
        executor.usePool(pool);
        if (old != null) {
            old.close();
        }
        return pool;
    }

    /** The runtime a pool key names: {@code LANGUAGE} or {@code LANGUAGE@IMAGE}. */
    private Optional<LanguageRuntime> pooled(String key) {
        int at = key.indexOf('@');
        if (at < 0) {
            return runtimes.find(key);
        }
        try {
            return Optional.of(executor.runtimeFor(key.substring(0, at), key.substring(at + 1)));
        } catch (RequestException e) {
            System.getLogger("crucible.pool").log(System.Logger.Level.WARNING, "no warm pool for " + key + ": "
                    + e.getMessage());
            return Optional.empty();
        }
    }

    public Sandbox sandbox() {
        return sandbox;
    }

    public RuntimeRegistry runtimes() {
        return runtimes;
    }

    public Executor executor() {
        return executor;
    }

    @Override
    public synchronized void close() {
        if (pool != null) {
            executor.usePool(null);
            pool.close();
        }
        sandbox.close();
        runtimes.images().close();
    }
}
