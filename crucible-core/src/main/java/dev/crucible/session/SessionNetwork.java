package dev.crucible.session;

import dev.crucible.egress.Egress;
import dev.crucible.egress.NetworkRequest;
import dev.crucible.egress.policy.EgressPolicy;
import dev.crucible.egress.proxy.EgressProxy;
import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.runtime.LanguageRuntime;
import dev.crucible.runtime.RuntimeRegistry;
import dev.crucible.session.spec.SessionInfo;
import dev.crucible.session.store.SessionStore;
import dev.crucible.session.workspace.DataDirFull;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

/**
 * Sessions' network egress: what a new session is granted within the operator's lists, the proxy a session's sandboxes
 * share (made at its first sandbox with egress, kept across restarts of its interpreter), and narrowing a session's
 * list for good, recorded so that it holds after a restart of the server.
 */
final class SessionNetwork {
    private final RuntimeRegistry runtimes;
    private final SessionStore store;
    private final Path dataDir;
    private volatile Egress egress = Egress.off();

    SessionNetwork(RuntimeRegistry runtimes, SessionStore store, Path dataDir) {
        this.runtimes = runtimes;
        this.store = store;
        this.dataDir = dataDir;
    }

    /** Grants sessions' network requests within {@code operatorEgress} from now on. */
    void use(Egress operatorEgress) {
        this.egress = operatorEgress;
    }

    /**
     * The egress a new session in {@code runtime} gets for {@code asked}: null for none.
     *
     * @throws RequestException as {@link Egress#grant}
     */
    EgressPolicy grant(NetworkRequest asked, LanguageRuntime runtime) {
        return egress.grant(asked, runtimes.egressAllow(runtime));
    }

    /**
     * The session's proxy, made at its first sandbox with egress over what of its stored list the operator's lists
     * still hold (an operator who narrowed them since narrows it too); null for a session without network. The caller
     * holds the session's lock.
     */
    EgressProxy proxyFor(Session session, LanguageRuntime runtime) {
        List<String> entries = session.stored.egress();
        if (entries == null || entries.isEmpty()) { // none, or locked: a sandbox started now has no network at all
            return null;
        }
        if (session.egress == null) {
            EgressPolicy within = egress.widest().union(runtimes.egressAllow(runtime));
            List<String> kept = entries.stream().filter(within::holds).toList();
            session.egress = egress.open(EgressPolicy.parse(kept));
        }
        return session.egress;
    }

    /**
     * Narrows {@code session}'s egress for good to {@code asked} and closes its open connections; see
     * {@link SessionManager#narrowNetwork}.
     *
     * @throws RequestException as {@link SessionManager#narrowNetwork}
     */
    SessionInfo narrow(Session session, NetworkRequest asked) {
        session.lock.lock();
        try {
            List<String> now = session.stored.egress() == null ? List.of() : session.stored.egress();
            EgressPolicy narrower = narrowed(now, asked);
            SessionStore.Stored stored = session.stored.withEgress(narrower.entries());
            IOException unrecorded = null;
            try {
                store.write(stored);
            } catch (IOException e) {
                unrecorded = e;
            }
            // in force even unrecorded: egress only narrows, and a lock asked for must not wait for disk space
            session.stored = stored;
            if (session.egress != null) {
                session.egress.narrowTo(narrower);
            }
            session.touch();
            if (unrecorded != null) {
                throw DataDirFull.orElse(unrecorded, dataDir, "the record of the narrower egress (in force"
                        + " now, but a restart would bring back the old list: send it again once there is room)",
                        new RequestException(ErrorCode.INTERNAL, "the narrower egress is in force, but cannot be"
                                + " recorded (send it again): " + unrecorded.getMessage()));
            }
            return session.info();
        } finally {
            session.lock.unlock();
        }
    }

    /**
     * {@code now} narrowed to {@code asked}: {@link EgressPolicy#none()} for no entries or mode none.
     *
     * @throws RequestException {@code egress_not_allowed} for an entry outside {@code now}
     */
    private static EgressPolicy narrowed(List<String> now, NetworkRequest asked) {
        if (asked == null) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "send {\"allow\": [...]}: the entries to keep, none to lock");
        }
        EgressPolicy kept = Egress.narrow(EgressPolicy.parse(now), asked,
                "this session has no network egress, and a session's egress can only narrow");
        return kept == null ? EgressPolicy.none() : kept;
    }
}
