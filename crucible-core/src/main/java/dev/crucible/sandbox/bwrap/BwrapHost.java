package dev.crucible.sandbox.bwrap;

import dev.crucible.sandbox.Isolation;
import dev.crucible.sandbox.Limits;
import dev.crucible.sandbox.SandboxConfig;
import dev.crucible.sandbox.SandboxHost;
import dev.crucible.sandbox.SandboxResult;
import dev.crucible.sandbox.SandboxSpec;
import dev.crucible.sandbox.SandboxUnavailableException;
import dev.crucible.sandbox.Verdict;
import dev.crucible.sandbox.cgroup.Cgroups;
import dev.crucible.sandbox.launch.Gvisor;
import dev.crucible.sandbox.launch.HostTools;
import dev.crucible.sandbox.launch.LaunchCommand;
import dev.crucible.sandbox.uid.UidLease;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * What a {@link BwrapSandbox} reports about its host: the facts and warnings are fixed at start, the run groups are
 * counted on each call. Immutable apart from that count; thread-safe.
 */
record BwrapHost(List<String> describe, List<String> warnings, Path workRoot, int uidBase, int sharedUid, Slots slots,
        Gvisor gvisor) implements SandboxHost {
    private static final System.Logger LOG = System.getLogger("crucible.sandbox");

    BwrapHost {
        describe = List.copyOf(describe);
        warnings = List.copyOf(warnings);
    }

    /** This report with {@code line} added to what it describes (a fact that changes while the launcher runs). */
    BwrapHost with(String line) {
        List<String> lines = new ArrayList<>(describe);
        lines.add(line);
        return new BwrapHost(lines, warnings, workRoot, uidBase, sharedUid, slots, gvisor);
    }

    /** Puts the report together and logs its warnings. */
    static BwrapHost report(SandboxConfig config, HostTools tools, LaunchCommand command, Cgroups cgroups,
            String tuning, int seccompInstructions, Slots slots, Path workRoot) {
        boolean root = tools.uid() == 0;
        int base = slots.uidBase();
        List<String> describe = List.of(
                "launcher: " + command.bwrap() + " via " + (command.viaHelper() ? "crucible-launch" : "sh + setpriv")
                        + (root ? ", slot uids " + slots.layout().slotUids() + ", session uids "
                        + slots.layout().sessionUids() + ", zygote uids " + slots.layout().zygoteUids()
                        + " (leased host-wide with their root blocks in " + UidLease.DIRECTORY + ")"
                        : " as uid " + tools.uid()),
                "cgroups: " + cgroups.describe() + "; " + tuning,
                "seccomp: " + seccompInstructions
                        + " BPF instructions (libseccomp), AF_UNIX only, architecture checked",
                "slots: " + config.slots(),
                "session commands: " + (command.supervises() ? "yes (crucible-supervisor beside the interpreter)"
                        : "no (this build has no crucible-supervisor or crucible-launch: a C compiler at build time)"));
        List<String> warnings = new ArrayList<>();
        if (!root) {
            warnings.add("not running as root: every sandbox runs as this server's uid " + tools.uid()
                    + " (mapped to 1000 inside), so an escape lands on the server's own uid and the sandboxes share"
                    + " its process count; run as root to get a separate unprivileged uid per slot");
        }
        if (cgroups instanceof Cgroups.None none) {
            warnings.add("no writable cgroup (" + none.reason() + "): memory, pids and CPU are bounded by rlimits"
                    + " only (RLIMIT_AS, RLIMIT_NPROC, RLIMIT_CPU per process); memory_limit and cpu_ms are not"
                    + " measured and a fork bomb is bounded only by the wall clock");
        }
        for (String w : warnings) {
            LOG.log(System.Logger.Level.WARNING, w);
        }
        return new BwrapHost(describe, warnings, workRoot, base, root ? -1 : tools.uid(), slots, command.gvisor());
    }

    @Override
    public String isolationUnavailable(Isolation tier) {
        return tier == Isolation.GVISOR ? gvisor.unavailable() : SandboxHost.super.isolationUnavailable(tier);
    }

    @Override
    public String isolationDescription(Isolation tier) {
        if (tier != Isolation.GVISOR) {
            return SandboxHost.super.isolationDescription(tier);
        }
        return gvisor.unavailable() != null ? null : gvisor.version() + ", platform " + gvisor.platform();
    }

    @Override
    public int liveRunGroups() {
        return slots.liveRunGroups();
    }

    /** Runs {@code /bin/true} once in {@code sandbox}: a host that cannot build namespaces fails at start, in bwrap's words. */
    static void selfTest(BwrapSandbox sandbox) {
        try {
            SandboxResult r = sandbox.run(SandboxSpec.of(List.of("/usr/bin/true"), Limits.DEFAULT));
            if (r.verdict() != Verdict.OK) {
                String why = r.sandboxError() != null ? r.sandboxError()
                        : new String(r.stderr(), StandardCharsets.UTF_8).strip();
                sandbox.close();
                throw new SandboxUnavailableException("the sandbox cannot start on this host: " + why
                        + " (user namespaces disabled? see docs/security.md)");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new SandboxUnavailableException("interrupted during the sandbox self-test", e);
        }
    }
}
