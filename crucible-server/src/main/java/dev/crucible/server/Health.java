package dev.crucible.server;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import dev.crucible.health.PartState;
import dev.crucible.health.PartStatus;
import dev.crucible.server.access.Admission;
import dev.crucible.server.services.Services;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
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

    /** @param peerConflict why this replica must not serve sessions (a peer answers with its name), or null */
    Health(Services services, Supplier<String> peerConflict) {
        this.services = services;
        this.peerConflict = peerConflict;
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

    /** Every part's state now: admission, the launcher's slots and zygotes, the peers. Cheap: no part is asked. */
    Readiness readiness() {
        List<PartStatus> parts = new ArrayList<>();
        Admission admission = services.admission();
        String turns = admission.running() + " of " + admission.maxRunning() + " running, " + admission.queued() + " of "
                + admission.maxQueued() + " queued";
        parts.add(admission.closed() ? PartStatus.down("admission", "draining: new work is refused")
                : PartStatus.ok("admission", turns));
        parts.addAll(services.engine().sandbox().parts());
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
            for (String line : java.nio.file.Files.readAllLines(java.nio.file.Path.of("/proc/self/status"))) {
                if (line.startsWith("VmRSS:")) {
                    return Long.parseLong(line.replaceAll("\\D", "")) * 1024;
                }
            }
        } catch (java.io.IOException | NumberFormatException e) {
            // not Linux
        }
        return -1;
    }
}
