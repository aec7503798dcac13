package dev.crucible.egress.proxy;

import dev.crucible.egress.policy.EgressPolicy;
import dev.crucible.egress.policy.EgressReason;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayDeque;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * One sandbox's egress proxy: an HTTP proxy that speaks {@code CONNECT host:port} (a byte tunnel; TLS stays end to
 * end, nothing is intercepted) and forward HTTP ({@code GET http://host/path}, sent on in origin form with
 * {@code Connection: close}). Each request is allowed only when its host and port are on the {@link EgressPolicy},
 * and every address the name resolves to (once, through the {@link EgressResolver}) is public by
 * {@link dev.crucible.egress.address.AddressRules} or listed verbatim; the proxy connects to those checked addresses
 * only. Anything else is answered with the reason's status and a one-line reason (in the status line, the body and
 * {@code X-Crucible-Egress}). Caps from {@link EgressLimits}: connections at once, bytes in all, idle time.
 *
 * <p>Listens on a unix domain socket ({@link #listen(Path)}, the file a sandbox gets bound in) and, for tests and
 * benchmarks, on loopback TCP ({@link #listenLoopback()}). Each connection relays on platform threads (blocking reads
 * without a poller's hop: measured faster than virtual threads on a 2-core host); accepting runs on a virtual thread. Thread-safe;
 * {@link #close()} ends every connection and removes the socket files.
 */
public final class EgressProxy implements AutoCloseable {
    private volatile EgressPolicy policy;
    private final EgressResolver resolver;
    private final EgressLimits limits;
    private final InstantSource clock;
    private final ByteBudget budget;
    private final Set<ProxyConnection> live = ConcurrentHashMap.newKeySet();
    private final List<ServerSocketChannel> listeners = new CopyOnWriteArrayList<>();
    private final List<Path> socketFiles = new CopyOnWriteArrayList<>();
    private final List<AutoCloseable> companions = new CopyOnWriteArrayList<>();
    private final AtomicInteger admitted = new AtomicInteger();
    private final AtomicInteger waiting = new AtomicInteger();
    private final Map<EgressReason, AtomicLong> byReason = new EnumMap<>(EgressReason.class);
    private final AtomicLong bytesSent = new AtomicLong();
    private final AtomicLong bytesReceived = new AtomicLong();
    private final ArrayDeque<EgressDecision> decisions = new ArrayDeque<>();
    /** One daemon thread for every proxy's idle checks: a check only closes channels. */
    private static final ScheduledExecutorService WATCHDOG = Executors.newSingleThreadScheduledExecutor(
            Thread.ofPlatform().name("crucible-egress-idle").daemon().factory());

    private final ScheduledFuture<?> idleCheck;
    private volatile boolean closed;

    private final Consumer<EgressCounters> onClose;

    private EgressProxy(EgressPolicy policy, EgressResolver resolver, EgressLimits limits, InstantSource clock,
            Consumer<EgressCounters> onClose) {
        this.onClose = onClose;
        this.policy = policy;
        this.resolver = resolver;
        this.limits = limits;
        this.clock = clock;
        this.budget = new ByteBudget(limits.maxBytes());
        for (EgressReason reason : EgressReason.values()) {
            byReason.put(reason, new AtomicLong());
        }
        long period = Math.clamp(limits.idleTimeout().toMillis() / 4, 10, 1000);
        this.idleCheck = WATCHDOG.scheduleWithFixedDelay(this::closeIdle, period, period, TimeUnit.MILLISECONDS);
    }

    /**
     * A proxy that listens nowhere yet: call {@link #listen(Path)} or {@link #listenLoopback()}.
     *
     * @param clock stamps decisions ({@link EgressDecision#at()}); idle time is measured on the monotonic clock
     */
    public static EgressProxy create(EgressPolicy policy, EgressResolver resolver, EgressLimits limits,
            InstantSource clock) {
        return new EgressProxy(policy, resolver, limits, clock, counters -> { });
    }

    /** As {@link #create(EgressPolicy, EgressResolver, EgressLimits, InstantSource)}; {@code onClose} gets the totals. */
    public static EgressProxy create(EgressPolicy policy, EgressResolver resolver, EgressLimits limits, InstantSource clock,
            Consumer<EgressCounters> onClose) {
        return new EgressProxy(policy, resolver, limits, clock, onClose);
    }

    /**
     * Listens on a new unix domain socket at {@code socketFile} (which must not exist; its directory decides who may
     * connect). The file is removed on {@link #close()}.
     */
    public void listen(Path socketFile) throws IOException {
        ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        server.bind(UnixDomainSocketAddress.of(socketFile));
        socketFiles.add(socketFile);
        start(server, "unix:" + socketFile);
    }

    /**
     * Answers connections on {@code listener}, already bound and listening (a sandbox's loopback listener, made in its
     * network namespace), until the returned handle or the proxy is closed. One proxy may serve several listeners in
     * turn (a session's sandbox, started again). Closing the handle (the sandbox has ended) also closes every
     * connection accepted on {@code listener} ({@link EgressEnding#PROXY_CLOSED}): no client of it is left, and an
     * origin that stalls would otherwise hold the connection, a thread and a place under the cap until the idle
     * timeout. It closes {@code companion} (the namespace's descriptor) too, at once if the proxy is already closed.
     */
    public AutoCloseable serve(ServerSocketChannel listener, String name, AutoCloseable companion) throws IOException {
        AutoCloseable handle = () -> {
            listeners.remove(listener);
            closeQuietly(listener);
            for (ProxyConnection connection : live) {
                if (connection.acceptedOn(listener)) {
                    connection.close(EgressEnding.PROXY_CLOSED);
                }
            }
            closeQuietly(companion);
        };
        companions.add(handle);
        try {
            start(listener, name);
        } catch (IOException e) {
            closeQuietly(handle);
            throw e;
        }
        return () -> {
            companions.remove(handle);
            closeQuietly(handle);
        };
    }

    /**
     * Narrows what the proxy allows from now on to {@code narrower}, which the caller has checked is within the current
     * policy ({@link EgressPolicy#narrow}); every open connection is closed ({@link EgressEnding#LOCKED}), so nothing
     * opened under the wider list goes on. {@link EgressPolicy#none()} drops egress for good ("install, then lock").
     */
    public void narrowTo(EgressPolicy narrower) {
        policy = narrower;
        for (ProxyConnection connection : live) {
            connection.close(EgressEnding.LOCKED);
        }
    }

    /** {@link #narrowTo narrowTo(none)}. */
    public void lock() {
        narrowTo(EgressPolicy.none());
    }

    /** Listens on 127.0.0.1 on a free port, returned. For tests and benchmarks: a sandbox has no TCP to the host. */
    public InetSocketAddress listenLoopback() throws IOException {
        ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.INET);
        server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 128);
        start(server, "tcp:" + server.getLocalAddress());
        return (InetSocketAddress) server.getLocalAddress();
    }

    private void start(ServerSocketChannel server, String name) throws IOException {
        if (closed) {
            server.close();
            throw new ClosedChannelException();
        }
        listeners.add(server);
        Thread.ofVirtual().name("crucible-egress-accept " + name).start(() -> accept(server));
    }

    private void accept(ServerSocketChannel server) {
        while (!closed) {
            SocketChannel client;
            try {
                client = server.accept();
            } catch (IOException e) {
                return; // closed
            }
            boolean admit = admitted.incrementAndGet() <= limits.maxConnections();
            if (!admit) {
                admitted.decrementAndGet();
                // refusals are answered after reading the head, but not without bound
                if (waiting.incrementAndGet() > 4 * limits.maxConnections() + 16) {
                    waiting.decrementAndGet();
                    byReason.get(EgressReason.CONNECTION_CAP).incrementAndGet();
                    closeQuietly(client);
                    continue;
                }
            }
            ProxyConnection connection = new ProxyConnection(this, client, admit, server);
            live.add(connection);
            if (closed || !server.isOpen()) { // closed while this one was accepted: it was not among those closed
                connection.close(EgressEnding.PROXY_CLOSED);
            }
            Thread.ofPlatform().daemon().name("crucible-egress").start(connection);
        }
    }

    void finished(ProxyConnection connection, boolean wasAdmitted) {
        live.remove(connection);
        (wasAdmitted ? admitted : waiting).decrementAndGet();
    }

    void record(EgressDecision decision, long sent, long received) {
        byReason.get(decision.reason()).incrementAndGet();
        bytesSent.addAndGet(sent);
        bytesReceived.addAndGet(received);
        synchronized (decisions) {
            if (decisions.size() == limits.maxDecisions()) {
                decisions.removeFirst();
            }
            decisions.addLast(decision);
        }
    }

    private void closeIdle() {
        long now = System.nanoTime();
        long idle = limits.idleTimeout().toNanos();
        for (ProxyConnection connection : live) {
            connection.closeIfIdle(now, idle);
        }
    }

    /**
     * Waits until no connection is open, at most {@code timeout}: a sandbox that has exited closed its sockets, and each
     * connection's decision is recorded as its relay sees that.
     */
    public void awaitIdle(Duration timeout) throws InterruptedException {
        long end = System.nanoTime() + timeout.toNanos();
        while (!live.isEmpty() && System.nanoTime() < end) {
            Thread.sleep(5);
        }
    }

    /**
     * The latest decisions in the order they were judged (an allowed connection is recorded when it ends, after a
     * refusal judged meanwhile), at most {@link EgressLimits#maxDecisions()}.
     */
    public List<EgressDecision> decisions() {
        synchronized (decisions) {
            return decisions.stream().sorted(Comparator.comparing(EgressDecision::at)).toList();
        }
    }

    /** Totals since the proxy was created. */
    public EgressCounters counters() {
        Map<EgressReason, Long> counts = new EnumMap<>(EgressReason.class);
        byReason.forEach((reason, count) -> counts.put(reason, count.get()));
        return new EgressCounters(counts, bytesSent.get(), bytesReceived.get(), live.size());
    }

    public EgressPolicy policy() {
        return policy;
    }

    EgressResolver resolver() {
        return resolver;
    }

    EgressLimits limits() {
        return limits;
    }

    ByteBudget budget() {
        return budget;
    }

    Instant now() {
        return clock.instant();
    }

    /** Stops listening, closes every connection (their decisions end {@link EgressEnding#PROXY_CLOSED}). Idempotent. */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        for (ServerSocketChannel listener : listeners) {
            try {
                listener.close();
            } catch (IOException ignored) {
                // closing is all we wanted
            }
        }
        for (Path file : socketFiles) {
            try {
                Files.deleteIfExists(file);
            } catch (IOException ignored) {
                // a socket file left behind refuses connections; the sandbox's directory goes with it
            }
        }
        for (ProxyConnection connection : live) {
            connection.close(EgressEnding.PROXY_CLOSED);
        }
        companions.forEach(EgressProxy::closeQuietly);
        idleCheck.cancel(false);
        onClose.accept(counters());
    }

    private static void closeQuietly(AutoCloseable resource) {
        try {
            resource.close();
        } catch (Exception ignored) {
            // closing is all we wanted
        }
    }
}
