package dev.crucible.session;

import dev.crucible.sandbox.Sandbox;
import dev.crucible.session.budget.SessionNumbers;
import dev.crucible.session.store.SessionIds;
import dev.crucible.session.store.SessionLease;
import dev.crucible.session.store.SessionStore;
import java.io.IOException;
import java.nio.file.Files;
import java.time.InstantSource;
import java.util.Map;
import java.util.Optional;

/**
 * The sessions kept under the data directory, taken back DORMANT (their next cell resumes them): at start, all of them
 * on a single node and, on a replica, those it held last that no live replica holds; later, one whose replica is gone
 * when a request asks for it ({@link #adopt}). A session past its lifetime is removed instead. The caller serialises
 * {@link #adopt} with its own close.
 */
final class KeptSessions {
    private static final System.Logger LOG = System.getLogger("crucible.session");

    private final String replica;
    private final SessionStore store;
    private final SessionNumbers numbers;
    private final Sandbox sandbox;
    private final InstantSource clock;
    private final Map<String, Session> sessions;

    /** Takes sessions back into {@code sessions}, as {@code replica} (null on a single node). */
    KeptSessions(String replica, SessionStore store, SessionNumbers numbers, Sandbox sandbox, InstantSource clock,
            Map<String, Session> sessions) {
        this.replica = replica;
        this.store = store;
        this.numbers = numbers;
        this.sandbox = sandbox;
        this.clock = clock;
        this.sessions = sessions;
    }

    /** Takes back every session this node may hold now; a replica leaves others' (and records being made) alone. */
    void loadAll() {
        store.scan(this::keep, replica == null);
    }

    /** The replica that last held session {@code id} (a well-formed id), else the one named in the id. */
    String lastHolder(String id) {
        return SessionLease.holder(store.dir(id)).orElse(SessionIds.replicaOf(id));
    }

    /**
     * Takes back a session kept from an earlier run, or removes it when past its lifetime. A replica takes back only
     * the sessions it held last, and only when no live replica holds them.
     */
    private void keep(SessionStore.Stored stored) {
        SessionLease lease = null;
        if (replica != null) {
            if (!replica.equals(lastHolder(stored.id()))) {
                return; // another replica's: taken over when a request for it finds its holder gone
            }
            try {
                lease = SessionLease.tryTake(store.dir(stored.id()), replica).orElse(null);
            } catch (IOException e) {
                LOG.log(System.Logger.Level.WARNING, "cannot take the session " + stored.id() + ": " + e.getMessage());
            }
            if (lease == null) {
                return;
            }
        }
        load(stored, lease);
    }

    /**
     * Takes over session {@code id} (a well-formed id, not held here) from a replica that is gone, when the data
     * directory is shared and has it and no live replica holds it.
     *
     * @return whether this replica holds it now
     */
    boolean adopt(String id) {
        SessionLease lease;
        try {
            lease = SessionLease.tryTake(store.dir(id), replica).orElse(null);
        } catch (IOException e) {
            return false; // no such session directory here: not shared, or gone
        }
        if (lease == null) {
            return false;
        }
        Optional<SessionStore.Stored> stored = store.read(id);
        if (stored.isEmpty()) {
            lease.close();
            return false;
        }
        boolean loaded = load(stored.get(), lease);
        if (loaded) {
            LOG.log(System.Logger.Level.INFO, "took over the session " + id + " (its replica is gone)");
        }
        return loaded;
    }

    /**
     * Loads a stored session as DORMANT under {@code lease} (null on a single node); one past its lifetime, or a spare
     * made ahead and never taken, is removed.
     */
    private boolean load(SessionStore.Stored stored, SessionLease lease) {
        if (clock.millis() > stored.endOfLifeMs() || stored.owner().equals(SessionMaker.SPARE)) { // no one's
            store.remove(stored, store.workspace(stored, sandbox.sessionUid(stored.number())));
            if (lease != null) {
                lease.close();
            }
            return false;
        }
        try {
            store.attach(stored);
            int number = numbers.retake(stored.number(), stored.owner(), stored.limits().memoryMb());
            if (number != stored.number()) {
                stored = stored.withNumber(number);
                try {
                    store.write(stored);
                } catch (IOException e) { // the old record stays whole: the next start takes a number again
                    LOG.log(System.Logger.Level.WARNING, "cannot record the new number of the session " + stored.id()
                            + ": " + e.getMessage());
                }
            }
            store.chownIfMoved(stored, sandbox.sessionUid(number), sandbox.sessionRootUid(number));
            Session session = new Session(stored, store.workspace(stored, sandbox.sessionUid(stored.number())),
                    Files.isDirectory(SessionRunner.memoryOf(store, stored)) ? Session.State.PAUSED
                            : Session.State.DORMANT, clock);
            session.lease = lease;
            sessions.put(stored.id(), session);
            return true;
        } catch (IOException | RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "cannot load the session " + stored.id() + ": " + e.getMessage());
            if (lease != null) {
                lease.close();
            }
            return false;
        }
    }
}
