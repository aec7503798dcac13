package dev.crucible.session;

import dev.crucible.egress.EgressReport;
import dev.crucible.egress.proxy.EgressProxy;
import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.runtime.LanguageRuntime;
import dev.crucible.runtime.RuntimeRegistry;
import dev.crucible.sandbox.Isolation;
import dev.crucible.sandbox.Sandbox;
import dev.crucible.sandbox.SandboxSpec;
import dev.crucible.session.interpreter.Interpreter;
import dev.crucible.session.process.BackgroundProcess;
import dev.crucible.session.process.ProcessInfo;
import dev.crucible.session.process.Supervisor;
import dev.crucible.session.spec.PortInfo;
import dev.crucible.session.spec.SessionInfo;
import dev.crucible.session.store.SessionLease;
import dev.crucible.session.store.SessionStore;
import dev.crucible.session.workspace.Workspace;
import java.time.Instant;
import java.time.InstantSource;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One session: what is stored, its workspace, and the live interpreter when there is one. {@link #interpreter} and
 * the state change under {@link #lock} (the cells of a session run one at a time); {@link #state} and
 * {@link #lastUsedMs} may be read without it.
 */
final class Session {
    /** Where a session is in its life. */
    enum State {
        /** Kept from an earlier run of the server, no interpreter yet: the next one resumes it (replaying if asked). */
        DORMANT,
        /**
         * Paused (issue 30): its sandbox was saved whole (behind gVisor: {@code <session dir>/memory}) or stopped, its
         * files kept; the next call resumes it, from that memory when there is one, else as a DORMANT one.
         */
        PAUSED,
        /** An interpreter was started for it (it may have died since: the next cell finds out). */
        LIVE,
        /** Its interpreter died or broke the protocol: the next cell starts a fresh one and reports a restart. */
        BROKEN,
        /** Deleted or expired: it no longer exists for anyone. */
        GONE;

        /** Whether a session in this state may move to {@code next}: nothing comes back from GONE, none goes DORMANT. */
        boolean mayBecome(State next) {
            return this != GONE && next != DORMANT || this == GONE && next == GONE;
        }
    }

    volatile SessionStore.Stored stored;
    /** This replica's hold on the session when replicas share the data directory; null on a single node. */
    SessionLease lease;
    /** The session's egress proxy, made at its first sandbox with egress, kept across restarts; null without. */
    EgressProxy egress;
    final Workspace workspace;
    final ReentrantLock lock = new ReentrantLock();
    private final InstantSource clock;
    Interpreter interpreter;
    /** The supervisor of the interpreter's sandbox (commands beside it); null without one. Set with the interpreter. */
    volatile Supervisor supervisor;
    /** The sandbox of the interpreter (its ports are reached through it); null without one. Set with the interpreter. */
    volatile Sandbox.Interactive box;
    /** Connections through its ports open now: use of the session, as a running background process is. */
    final AtomicInteger portConnections = new AtomicInteger();
    private volatile State state;
    volatile long lastUsedMs;

    Session(SessionStore.Stored stored, Workspace workspace, State state, InstantSource clock) {
        this.stored = stored;
        this.workspace = workspace;
        this.state = state;
        this.clock = clock;
        this.lastUsedMs = clock.millis();
    }

    void touch() {
        lastUsedMs = clock.millis();
    }

    /** Where it is in its life now. */
    State state() {
        return state;
    }

    /**
     * Moves it to {@code next}: the one place its state is written. A move {@link State#mayBecome} refuses (out of
     * GONE: a session deleted while a call on it ran) changes nothing and says so.
     *
     * @return whether it moved (false: it is gone)
     */
    synchronized boolean transition(State next) {
        State now = state;
        if (!now.mayBecome(next)) {
            if (now == State.GONE) {
                return false;
            }
            throw new IllegalStateException("session " + stored.id() + " cannot go from " + now + " to " + next);
        }
        state = next;
        return true;
    }

    /** Its interpreter, supervisor and sandbox, started together: set together. */
    void attach(Interpreter interpreter, Supervisor supervisor, Sandbox.Interactive box) {
        this.supervisor = supervisor;
        this.box = box;
        this.interpreter = interpreter;
    }

    /** Lets go of its interpreter, supervisor and sandbox together (each closed by whoever stopped them). */
    void detach() {
        interpreter = null;
        supervisor = null;
        box = null;
    }

    InstantSource clock() {
        return clock;
    }

    boolean gone() {
        return state == State.GONE;
    }

    /**
     * When the reaper removes it: idle past its timeout, or past its lifetime, whichever comes first (a paused one: past
     * its lifetime only). A running
     * background process or an open connection through a port is use: the idle timeout counts from its end.
     */
    long expiresAtMs() {
        if (state == State.PAUSED) { // kept until resumed, as long as its lifetime allows: pausing is asking to keep it
            return stored.endOfLifeMs();
        }
        Supervisor commands = supervisor;
        boolean inUse = commands != null && commands.busy() || portConnections.get() > 0;
        long used = inUse ? clock.millis() : lastUsedMs;
        return Math.min(used + stored.idleTimeoutS() * 1000, stored.endOfLifeMs());
    }

    boolean expired() {
        return clock.millis() >= expiresAtMs();
    }

    /** Closes the interpreter (a running cell ends with the interpreter's death); the state is the caller's. */
    void stopInterpreter() {
        Interpreter live = interpreter;
        if (live != null) {
            live.close();
        }
    }

    /** Closes the interpreter and the egress proxy: the session is gone, or the server stops. */
    void stopAll() {
        stopInterpreter();
        EgressProxy proxy = egress;
        if (proxy != null) {
            proxy.close();
        }
    }

    /** Lets another replica take the session (after its interpreter and workspace are let go). */
    void releaseLease() {
        SessionLease held = lease;
        if (held != null) {
            held.close();
        }
    }

    /** The egress as the info shows it: the list now and the connections judged, or null without network. */
    private EgressReport network() {
        EgressProxy proxy = egress;
        if (proxy != null) {
            return EgressReport.of(proxy);
        }
        List<String> entries = stored.egress();
        return entries == null ? null : new EgressReport(entries, List.of());
    }

    /** Its background processes, oldest first: none when its sandbox is not running. */
    List<ProcessInfo> processes() {
        Supervisor commands = supervisor;
        return commands == null ? List.of() : commands.processes().stream().map(BackgroundProcess::info).toList();
    }

    /** As the API shows it, without its ports (reading them is a walk of the kernel's TCP table: milliseconds). */
    SessionInfo info() {
        return info(false);
    }

    /** As the API shows it; {@code withPorts}: with the ports something listens on now (one session's own view). */
    SessionInfo info(boolean withPorts) {
        Interpreter live = interpreter;
        return new SessionInfo(stored.id(), stored.language(), Instant.ofEpochMilli(stored.createdAtMs()).toString(),
                Instant.ofEpochMilli(expiresAtMs()).toString(), Instant.ofEpochMilli(lastUsedMs).toString(),
                stored.idleTimeoutS(), stored.restore(), state == State.PAUSED ? "paused"
                        : live != null && live.alive() ? "running" : "dormant",
                stored.limits(), stored.image() == null ? null : stored.image().reference(),
                stored.image() == null ? null : stored.image().digest(), network(), processes(),
                withPorts ? ports() : null, stored.pausesWhenIdle() ? "pause" : "delete", null, stored.isolation());
    }

    /**
     * The runtime its sandboxes run: its language's, in the image it started on (by digest, even if the image's name
     * now points elsewhere), behind the tier it was made behind (or its runtime's, if that is stronger now).
     *
     * @throws RequestException {@code interpreter_unavailable} when that runtime or image is gone
     */
    LanguageRuntime runtime(RuntimeRegistry runtimes) {
        SessionStore.Stored s = stored;
        LanguageRuntime runtime = runtimes.find(s.language()).orElseThrow(() -> new RequestException(
                ErrorCode.INTERPRETER_UNAVAILABLE, "runtime " + s.language() + " is no longer configured"));
        if (s.image() != null) {
            String digest = s.image().digest();
            runtime = runtimes.inImage(runtime, runtimes.images().find(digest).orElseThrow(() -> new RequestException(
                    ErrorCode.INTERPRETER_UNAVAILABLE, "the session's image " + s.image().reference() + " (" + digest
                            + ") is no longer in the store; run: crucible image pull " + s.image().reference())));
        }
        return s.isolation() == null ? runtime // recorded before sessions had a tier: its runtime's
                : runtime.withIsolation(runtime.tier().atLeast(Isolation.parse(s.isolation())));
    }

    /** The ports something listens on in its sandbox now (the egress proxy's left out): none when not running. */
    List<PortInfo> ports() {
        Sandbox.Interactive live = box;
        if (live == null || !live.alive()) {
            return List.of();
        }
        boolean egress = stored.egress() != null && !stored.egress().isEmpty();
        return live.listening().stream().filter(p -> !(egress && p == SandboxSpec.PROXY_PORT))
                .map(p -> new PortInfo(p, "/v1/sessions/" + stored.id() + "/ports/" + p + "/")).toList();
    }
}
