package dev.crucible.server.metrics;

import dev.crucible.egress.policy.EgressReason;
import dev.crucible.exec.Executor;
import dev.crucible.health.PartStatus;
import dev.crucible.health.Replacements;
import dev.crucible.pool.WarmPool;
import dev.crucible.sandbox.Verdict;
import dev.crucible.server.access.Admission;
import dev.crucible.session.SessionManager;
import dev.crucible.session.spec.CellStatus;
import dev.crucible.util.FairTurns;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/** The Prometheus metrics of {@code GET /metrics}: requests, latency, verdicts, pool, queue. Thread-safe. */
public final class Metrics {
    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);

    /** The latest state level of each part seen by a scrape (0 ok, 1 degraded, 2 down), read by its gauge. */
    private final Map<String, Integer> partStates = new ConcurrentHashMap<>();
    /** By route, method and status: the routes are the route table's (unmatched requests share one), so few. */
    private final Map<String, Counter> requests = new ConcurrentHashMap<>();
    private final Map<String, Timer> durations = new ConcurrentHashMap<>();

    public Metrics(Admission admission, Executor executor, Replacements replacements) {
        for (var part : Replacements.Part.values()) {
            for (var reason : Replacements.Reason.values()) {
                FunctionCounter.builder("crucible_part_replacements", replacements,
                                r -> r.counts().getOrDefault(part.label(), Map.of())
                                        .getOrDefault(reason.label(), 0L))
                        .tag("part", part.label()).tag("reason", reason.label())
                        .description("stuck or dead parts replaced by the server itself, by part and reason")
                        .register(registry);
            }
        }
        Gauge.builder("crucible_queue_depth", admission, Admission::queued)
                .description("requests waiting for a turn").register(registry);
        Gauge.builder("crucible_running", admission, Admission::running)
                .description("executions running now").register(registry);
        turns("runs", admission.turns());
        Gauge.builder("crucible_pool_ready", executor, e -> pool(e) == null ? 0 : pool(e).size())
                .description("warm sandboxes ready").register(registry);
        FunctionCounter.builder("crucible_pool_hits", executor, e -> pool(e) == null ? 0 : pool(e).hits())
                .description("requests served by a warm sandbox").register(registry);
        FunctionCounter.builder("crucible_pool_misses", executor, e -> pool(e) == null ? 0 : pool(e).misses())
                .description("poolable requests that found no warm sandbox").register(registry);
        FunctionCounter.builder("crucible_pool_launches", executor, e -> pool(e) == null ? 0 : pool(e).launches())
                .description("warm sandboxes started").register(registry);
        FunctionCounter.builder("crucible_pool_forked", executor, e -> pool(e) == null ? 0 : pool(e).forked())
                .description("poolable requests that found no warm sandbox and got one forked from a zygote at once")
                .register(registry);
        for (EgressReason reason : EgressReason.values()) {
            FunctionCounter.builder("crucible_egress_requests", executor,
                            e -> e.egress().totals().byReason().get(reason))
                    .tag("decision", reason.wireName())
                    .description("egress proxy requests judged (of sandboxes that have ended), by decision")
                    .register(registry);
        }
        FunctionCounter.builder("crucible_egress_bytes", executor, e -> e.egress().totals().bytesReceived())
                .tag("direction", "received").description("bytes relayed by egress proxies").register(registry);
        FunctionCounter.builder("crucible_egress_bytes", executor, e -> e.egress().totals().bytesSent())
                .tag("direction", "sent").description("bytes relayed by egress proxies").register(registry);
    }

    /**
     * The figures of {@code turns} (tagged {@code turns=what}): held, waiting, turns given and the seconds they waited,
     * refusals by reason.
     */
    private void turns(String what, FairTurns turns) {
        Gauge.builder("crucible_turns_running", turns, t -> t.stats().running()).tag("turns", what)
                .description("turns held now").register(registry);
        Gauge.builder("crucible_turns_queued", turns, t -> t.stats().queued()).tag("turns", what)
                .description("requests waiting for a turn now").register(registry);
        Gauge.builder("crucible_turns_limit_running", turns, t -> t.limits().running()).tag("turns", what)
                .description("turns held at once at most").register(registry);
        Gauge.builder("crucible_turns_limit_queued", turns, t -> t.limits().queued()).tag("turns", what)
                .description("requests that may wait at most").register(registry);
        FunctionCounter.builder("crucible_turns_given", turns, t -> t.stats().given()).tag("turns", what)
                .description("turns given so far").register(registry);
        FunctionCounter.builder("crucible_turns_wait_seconds", turns, t -> t.stats().waitedMs() / 1000.0)
                .tag("turns", what).description("time requests waited for their turns, in all").register(registry);
        for (var why : FairTurns.Refusal.values()) {
            FunctionCounter.builder("crucible_turns_refused", turns, t -> t.stats().refused(why)).tag("turns", what)
                    .tag("reason", why.name().toLowerCase(Locale.ROOT))
                    .description("requests refused a turn, by reason").register(registry);
        }
    }

    /** Counts the sessions {@code sessions} keeps, as {@code crucible_sessions}. */
    public void countSessions(SessionManager sessions) {
        turns("session_creates", sessions.creates());
        Gauge.builder("crucible_sessions", sessions, SessionManager::size).description("sessions kept")
                .register(registry);
        Gauge.builder("crucible_sessions_spares", sessions, SessionManager::sparesReady)
                .description("sessions made ahead, ready for a create that fits").register(registry);
        Gauge.builder("crucible_sessions_memory_budget_bytes", sessions, s -> s.numbers().memoryBudgetMb() << 20)
                .description("the memory all sessions together may use (their group's limit)").register(registry);
        Gauge.builder("crucible_sessions_memory_reserved_bytes", sessions, s -> s.numbers().memoryReservedMb() << 20)
                .description("what sessions are admitted for: the sum of their requests").register(registry);
        Gauge.builder("crucible_sessions_memory_used_bytes", sessions, s -> s.numbers().memoryUsedBytes())
                .description("what sessions use now: their group's charge (-1: no group)").register(registry);
    }

    private static WarmPool pool(Executor executor) {
        return executor.pool();
    }

    /** One HTTP request answered, by the route it matched ({@code unmatched}: none), in {@code nanos}. */
    public void request(String route, String method, int status, long nanos) {
        // each meter looked up by a key of our own: building and registering one (its tags sorted, its id hashed)
        // on every request was about a twentieth of the HTTP floor's CPU (issue 33)
        requests.computeIfAbsent(route + ' ' + method + ' ' + status, key -> Counter.builder("crucible_http_requests")
                .tag("route", route).tag("method", method).tag("status", Integer.toString(status)).register(registry))
                .increment();
        durations.computeIfAbsent(route, key -> Timer.builder("crucible_http_request_duration").tag("route", route)
                .publishPercentileHistogram().minimumExpectedValue(Duration.ofMillis(1))
                .maximumExpectedValue(Duration.ofSeconds(120)).register(registry)).record(nanos,
                        TimeUnit.NANOSECONDS);
    }

    /** One stateless run's outcome. */
    public void verdict(Verdict status) {
        count(status.wireName(), status == Verdict.MEMORY_LIMIT, status == Verdict.TIMEOUT);
    }

    /** One session cell's outcome. */
    public void verdict(CellStatus status) {
        count(status.wireName(), status == CellStatus.MEMORY_LIMIT, status == CellStatus.TIMEOUT);
    }

    private void count(String status, boolean oomKilled, boolean timedOut) {
        Counter.builder("crucible_verdicts").tag("status", status).register(registry).increment();
        if (oomKilled) {
            Counter.builder("crucible_oom_kills").register(registry).increment();
        } else if (timedOut) {
            Counter.builder("crucible_timeouts").register(registry).increment();
        }
    }

    /** The metrics now, with each part's state of {@code parts} as {@code crucible_part_state{part}}. */
    public String scrape(List<PartStatus> parts) {
        for (var part : parts) {
            if (partStates.put(part.part(), part.state().level()) == null) {
                Gauge.builder("crucible_part_state", partStates, m -> m.getOrDefault(part.part(), 0))
                        .tag("part", part.part()).description("each part's state: 0 ok, 1 degraded, 2 down")
                        .register(registry);
            }
        }
        return registry.scrape();
    }
}
