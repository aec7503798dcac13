package dev.crucible.server;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import dev.crucible.health.PartState;
import dev.crucible.health.PartStatus;
import dev.crucible.server.access.Admission;
import dev.crucible.server.http.JsonObject;
import dev.crucible.server.services.Services;
import io.javalin.http.Context;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * Liveness and readiness in the Kubernetes convention. <b>Ready</b> ({@code /readyz}, and {@code /healthz} for
 * compatibility): no part is {@link PartState#DOWN} — not draining, not every slot stuck, no clash of replica names; a
 * degraded part (a zygote being replaced while its runs are spawned) still serves. <b>Live</b> ({@code /livez}): the
 * process can go on by itself — its launcher thread answers and its slots have not all been stuck for minutes; a
 * failed liveness is a restart, so it fails for nothing a replacement or a drain would mend. Thread-safe.
 */
final class Health {
    /** How long the launcher thread may take to answer a liveness check. */
    static final Duration LAUNCHER_BOUND = Duration.ofSeconds(3);

    private final Services services;
    private final Supplier<String> peerConflict;
    private final String replica;

    /**
     * @param peerConflict why this replica must not serve sessions (a peer answers with its name), or null
     * @param replica this replica's name when replicas serve together (the probes name it), else null
     */
    Health(Services services, Supplier<String> peerConflict, String replica) {
        this.services = services;
        this.peerConflict = peerConflict;
        this.replica = replica;
    }

    /** {@code GET /readyz}: 200 when this replica should get traffic, else 503 with the part that is down. */
    void ready(Context ctx) {
        Readiness readiness = readiness();
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("status", readiness.ready() ? "ready" : "not_ready");
        if (readiness.why() != null) {
            body.put("reason", readiness.why());
        }
        if (replica != null) {
            body.put("replica", replica);
        }
        body.put("queues", queues());
        body.put("parts", readiness.parts());
        ctx.status(readiness.ready() ? 200 : 503).json(body);
    }

    /** The queues of runs and of session creates: limits, depths, turns given, waits, refusals by reason. */
    Map<String, Object> queues() {
        return JsonObject.of("runs", Admission.shown(services.admission().turns()), "session_creates",
                Admission.shown(services.sessions().creates()));
    }

    /** {@code GET /livez}: 200 while the process can go on by itself, else 503 (restart it). */
    void live(Context ctx) throws InterruptedException {
        String notLive = notLive();
        ctx.status(notLive == null ? 200 : 503).json(notLive == null ? Map.of("status", "live")
                : JsonObject.of("status", "not_live", "reason", notLive));
    }

    /** One readiness report: ready when no part is down. */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    record Readiness(@JsonProperty("ready") boolean ready, @JsonProperty("parts") List<PartStatus> parts) {
        /** The first part that is down, as a sentence, or null. */
        String why() {
            return parts.stream().filter(p -> p.state() == PartState.DOWN).map(p -> p.part() + ": " + p.detail())
                    .findFirst().orElse(null);
        }
    }

    /** Every part's state now: admission, the launcher's slots and zygotes, the sessions' memory, the peers. Cheap: no part is asked. */
    Readiness readiness() {
        List<PartStatus> parts = new ArrayList<>();
        Admission admission = services.admission();
        String turns = admission.running() + " of " + admission.maxRunning() + " running, " + admission.queued() + " of "
                + admission.maxQueued() + " queued";
        parts.add(admission.closed() ? PartStatus.down("admission", "draining: new work is refused")
                : PartStatus.ok("admission", turns));
        parts.addAll(services.engine().sandbox().parts());
        parts.add(services.sessions().numbers().memoryPart());
        String conflict = peerConflict.get();
        if (conflict != null) {
            parts.add(PartStatus.down("peers", conflict));
        }
        return new Readiness(parts.stream().noneMatch(p -> p.state() == PartState.DOWN), List.copyOf(parts));
    }

    /** Whether the process can go on by itself; the reason when not, else null. */
    String notLive() throws InterruptedException {
        return services.engine().sandbox().live(LAUNCHER_BOUND) ? null
                : "the sandbox launcher does not answer within " + LAUNCHER_BOUND.toSeconds() + " s, or every slot has"
                        + " been stuck for minutes: restart the process";
    }

    /** This process's resident memory, from /proc/self/status, or -1. */
    static long rssBytes() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("VmRSS:")) {
                    return Long.parseLong(line.replaceAll("\\D", "")) * 1024;
                }
            }
        } catch (IOException | NumberFormatException e) {
            // not Linux
        }
        return -1;
    }
}
