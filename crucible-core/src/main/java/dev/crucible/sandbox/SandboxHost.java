package dev.crucible.sandbox;

import java.nio.file.Path;
import java.util.List;

/**
 * What a sandbox launcher reports about its host: the isolation in force, what is weaker than the full recipe, and
 * its footprint (work directory, uids, run cgroups). For {@code crucible runtimes}, start-up warnings and the checks
 * of tests; running programs needs none of it. Obtained through {@link Sandbox#host()}. Thread-safe.
 */
public interface SandboxHost {

    /** A host that reports nothing: no facts, no warnings, no run groups, no work root (null), no uids (-1). */
    SandboxHost NONE = new SandboxHost() {
        @Override
        public List<String> describe() {
            return List.of();
        }

        @Override
        public List<String> warnings() {
            return List.of();
        }

        @Override
        public int liveRunGroups() {
            return 0;
        }

        @Override
        public Path workRoot() {
            return null;
        }

        @Override
        public int uidBase() {
            return -1;
        }

        @Override
        public int sharedUid() {
            return -1;
        }
    };

    /** Human-readable facts about the isolation in force: privilege model, cgroups, seccomp size. */
    List<String> describe();

    /** Warnings about what is weaker than the full recipe on this host (not root, no cgroups); empty when none. */
    List<String> warnings();

    /** How many per-run cgroups exist right now (0 when idle; a leftover otherwise). */
    int liveRunGroups();

    /** The private work directory of this launcher (removed on close). */
    Path workRoot();

    /**
     * First host uid of this launcher's block when root (slot N runs as base + N, session N as base + 1000 + N),
     * leased host-wide so that no other Crucible process uses these uids while this one runs; -1 when not root.
     */
    int uidBase();

    /** Host uid of the server when the sandboxes run as it (not root), else -1. */
    int sharedUid();

    /**
     * Why programs cannot run behind {@code tier} here, as a sentence that says how to fix it, or null when they can
     * ({@link Isolation#NAMESPACES} always can where a sandbox runs at all).
     */
    default String isolationUnavailable(Isolation tier) {
        return tier == Isolation.NAMESPACES ? null : "this launcher has no " + tier.wire() + " tier";
    }

    /** What runs {@code tier} here ({@code "runsc version …, platform ptrace"}), or null when it is not available. */
    default String isolationDescription(Isolation tier) {
        return tier == Isolation.NAMESPACES ? "bubblewrap" : null;
    }
}
