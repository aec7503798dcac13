package dev.crucible.pool;

import dev.crucible.health.Replacements;
import dev.crucible.runtime.LanguageRuntime;
import dev.crucible.sandbox.Limits;
import dev.crucible.sandbox.Sandbox;
import dev.crucible.sandbox.SandboxSpec;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Sandboxes started ahead of demand, each running its language's agent and waiting for one program on stdin.
 * A request takes a ready one ({@link #take}), the pool refills in the background, and each sandbox serves exactly
 * one request and is then destroyed: nothing can pass from one request to the next. Thread-safe.
 *
 * <p>A pooled sandbox is started with the runtime's default limits; a request whose memory limit differs (its
 * heap flags and tmpfs sizes were fixed at start) or that carries files runs cold instead.
 */
public final class WarmPool implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger("crucible.pool");

    private final Sandbox sandbox;
    private final Map<String, Pool> pools = new ConcurrentHashMap<>();
    private final AtomicLong hits = new AtomicLong();
    private final AtomicLong misses = new AtomicLong();
    private final AtomicLong launches = new AtomicLong();
    private final AtomicLong forked = new AtomicLong();
    private volatile boolean closed;
    /** Launching is cgroup and process work (blocking system calls): platform threads, not virtual ones. */
    private final ExecutorService starters = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "crucible-pool");
        t.setDaemon(true);
        return t;
    });

    /**
     * @param sizes how many ready sandboxes to keep per runtime; runtimes that are not poolable are ignored
     */
    public WarmPool(Sandbox sandbox, Map<LanguageRuntime, Integer> sizes) {
        this.sandbox = sandbox;
        sizes.forEach((runtime, size) -> {
            if (runtime.poolable() && size > 0 && sandbox.limitsAdjustable()) {
                Pool pool = new Pool(runtime, size);
                pools.put(key(runtime), pool);
                pool.refill();
            }
        });
    }

    /** A pool's key: the language, the image it runs in and its tier (a sandbox behind one wall never serves another). */
    private static String key(LanguageRuntime runtime) {
        return (runtime.imageDigest() == null ? runtime.language() : runtime.language() + "@" + runtime.imageDigest())
                + "/" + runtime.tier().wire();
    }

    /** The limits a pooled sandbox of {@code runtime} starts with; RLIMIT_CPU and pids get the maximum until claimed. */
    static Limits launchLimits(LanguageRuntime runtime) {
        Limits base = runtime.limits();
        return new Limits(Limits.MAXIMUM.timeoutMs(), Limits.MAXIMUM.cpuMs(), base.memoryMb(), base.outputBytes(),
                Limits.MAXIMUM.pids());
    }

    /** What a pooled sandbox of {@code runtime} is started as: its agent, waiting for one program on stdin. */
    public static SandboxSpec launchSpec(LanguageRuntime runtime) {
        Limits limits = launchLimits(runtime);
        return new SandboxSpec(runtime.poolArgv(limits), runtime.env(), Map.of(), null, false, runtime.binds(),
                runtime.root(), null, limits).withIsolation(runtime.tier());
    }

    /** Counts a request that found no ready sandbox and was served by one forked for it at once (a zygote's). */
    public void countForked() {
        forked.incrementAndGet();
    }

    /** Requests served by a sandbox forked for them at once (a zygote's) when none was ready. */
    public long forked() {
        return forked.get();
    }

    /**
     * Whether a request with these limits and no files can be served from the pool of {@code runtime}.
     */
    public boolean serves(LanguageRuntime runtime, Limits limits) {
        return pools.containsKey(key(runtime)) && limits.memoryMb() == runtime.limits().memoryMb();
    }

    /** A ready sandbox for {@code runtime}, or empty (a miss) when none is ready; starts a refill either way. */
    public Optional<Sandbox.Launch> take(LanguageRuntime runtime) {
        Pool pool = pools.get(key(runtime));
        if (pool == null) {
            return Optional.empty();
        }
        try {
            Sandbox.Launch launch;
            while ((launch = pool.ready.pollFirst()) != null) {
                Sandbox.Launch.Readiness readiness = launch.readiness();
                if (readiness == Sandbox.Launch.Readiness.READY) {
                    hits.incrementAndGet();
                    return Optional.of(launch);
                }
                // killed or stopped while it waited (from outside): never hand it out; it is replaced by the refill
                abandonAside(launch);
                if (!closed && (readiness == Sandbox.Launch.Readiness.ENDED
                        || readiness == Sandbox.Launch.Readiness.STOPPED)) { // closing kills them: not a fault
                    sandbox.replacements().replaced(Replacements.Part.POOL_AGENT,
                            readiness == Sandbox.Launch.Readiness.ENDED ? Replacements.Reason.DIED
                                    : Replacements.Reason.UNANSWERED,
                            "a warm " + runtime.language() + " sandbox", "it " + (readiness
                                    == Sandbox.Launch.Readiness.ENDED ? "ended" : "was stopped")
                                    + " while it waited for a program; it was not handed out");
                }
            }
            misses.incrementAndGet();
            return Optional.empty();
        } finally {
            pool.refill();
        }
    }

    /** Abandons a launch off the request's path (its teardown may wait for the process); inline once closed. */
    private void abandonAside(Sandbox.Launch launch) {
        try {
            starters.execute(launch::abandon);
        } catch (RejectedExecutionException e) {
            launch.abandon();
        }
    }

    /** The agent's input: the program and its arguments, framed; the program's stdin follows. */
    public static byte[] payload(String code, List<String> args, String stdin) {
        byte[] source = code.getBytes(StandardCharsets.UTF_8);
        byte[] argv = String.join("\0", args).getBytes(StandardCharsets.UTF_8);
        byte[] input = stdin == null ? new byte[0] : stdin.getBytes(StandardCharsets.UTF_8);
        byte[] header = String.format("%08x%08x", source.length, argv.length).getBytes(StandardCharsets.US_ASCII);
        byte[] all = new byte[header.length + source.length + argv.length + input.length];
        System.arraycopy(header, 0, all, 0, header.length);
        System.arraycopy(source, 0, all, header.length, source.length);
        System.arraycopy(argv, 0, all, header.length + source.length, argv.length);
        System.arraycopy(input, 0, all, header.length + source.length + argv.length, input.length);
        return all;
    }

    /** Ready sandboxes now, over all runtimes. */
    public int size() {
        return pools.values().stream().mapToInt(p -> p.ready.size()).sum();
    }

    public long hits() {
        return hits.get();
    }

    public long misses() {
        return misses.get();
    }

    /** Sandboxes the pool has started. */
    public long launches() {
        return launches.get();
    }

    /** Stops refilling and kills every waiting sandbox. */
    @Override
    public void close() {
        closed = true;
        starters.shutdown();
        for (Pool pool : pools.values()) {
            Sandbox.Launch launch;
            while ((launch = pool.ready.pollFirst()) != null) {
                launch.abandon();
            }
        }
    }

    private static final long RETRY_MS = 200;
    /** How long a pooled sandbox may take to start its agent (at a low CPU weight, on a busy host) before it is replaced. */
    private static final long READY_MS = 30_000;

    private final class Pool {
        final LanguageRuntime runtime;
        final int size;
        final ConcurrentLinkedDeque<Sandbox.Launch> ready = new ConcurrentLinkedDeque<>();
        final AtomicInteger starting = new AtomicInteger();

        Pool(LanguageRuntime runtime, int size) {
            this.runtime = runtime;
            this.size = size;
        }

        void refill() {
            while (!closed && ready.size() + starting.get() < size) {
                starting.incrementAndGet();
                try {
                    starters.execute(this::startOne);
                } catch (RejectedExecutionException e) {
                    starting.decrementAndGet(); // closed meanwhile
                    return;
                }
            }
        }

        private void startOne() {
            boolean failed = true;
            try {
                SandboxSpec spec = launchSpec(runtime);
                Sandbox.Launch launch = sandbox.launch(spec, true);
                launches.incrementAndGet();
                Sandbox.Launch.Readiness readiness = closed ? Sandbox.Launch.Readiness.USED
                        : launch.awaitReady(READY_MS);
                if (closed || readiness != Sandbox.Launch.Readiness.READY) {
                    if (readiness == Sandbox.Launch.Readiness.STARTING) {
                        LOG.log(System.Logger.Level.WARNING, "a pooled " + runtime.language() + " sandbox did not"
                                + " start its agent within " + READY_MS + " ms; it is replaced");
                    }
                    launch.abandon();
                } else {
                    ready.addLast(launch);
                    failed = false;
                    if (closed) {
                        close();
                    }
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "cannot start a pooled " + runtime.language() + " sandbox", e);
            } finally {
                starting.decrementAndGet();
            }
            if (failed && !closed) {
                // a launch that failed or died at once is retried after a pause, not only at the next request's take()
                try {
                    Thread.sleep(RETRY_MS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
                refill();
            }
        }
    }
}
