package dev.crucible.server.agentsandbox;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.session.SessionManager;
import dev.crucible.session.process.CommandRequest;
import dev.crucible.session.process.CommandResult;
import dev.crucible.session.workspace.SessionFiles;
import java.util.List;

/**
 * The pod's one sandbox: a Crucible session of its own owner, made when the pod starts (or by the first call after a
 * failed start), made again if it is gone (its lifetime ran out, or someone deleted it through Crucible's own API:
 * its files are gone with it). Its base directory ({@code SANDBOX_BASE_DIR}, a path inside the sandbox) is made with
 * it. Thread-safe.
 */
final class PodSession {
    /** The owner of the pod's session: the server's one without tokens, so its own API shows it on loopback. */
    static final String OWNER = "";

    private final SessionManager sessions;
    private final String baseDir;
    private final long idleTimeoutS;
    private volatile String id;
    private volatile String failure;

    PodSession(SessionManager sessions, String baseDir, long idleTimeoutS) {
        this.sessions = sessions;
        this.baseDir = baseDir;
        this.idleTimeoutS = idleTimeoutS;
    }

    /** The base directory inside the sandbox: relative paths of the contracts are its. */
    String baseDir() {
        return baseDir;
    }

    /** Null when the session is made, else why it is not (yet): "starting", or its creation's failure. */
    String notReady() {
        return id != null ? null : failure != null ? failure : "starting";
    }

    /**
     * The session's id, made (again) when there is none or it is gone.
     *
     * @throws RequestException when it cannot be made (too many sessions, a full data directory…)
     */
    synchronized String id() throws InterruptedException {
        String current = id;
        if (current != null) {
            try {
                sessions.require(OWNER, current);
                return current;
            } catch (RequestException e) {
                if (e.code() != ErrorCode.SESSION_NOT_FOUND) {
                    throw e;
                }
                id = null; // gone: a new one below
            }
        }
        try {
            String made = sessions.create(OWNER, new SessionManager.CreateRequest("python", null, idleTimeoutS, null))
                    .id();
            sessions.files(OWNER, made).makeDirectories(baseDir);
            failure = null;
            id = made;
            return made;
        } catch (RequestException e) {
            failure = e.getMessage();
            throw e;
        }
    }

    /** Runs {@code argv} in the base directory to its end or {@code timeoutMs}, its process group killed then. */
    CommandResult run(List<String> argv, long timeoutMs) throws InterruptedException {
        return sessions.command(OWNER, id(), new CommandRequest(null, argv, null, baseDir, timeoutMs, null, null, null));
    }

    /** The sandbox's files as its user reaches them. */
    SessionFiles files() throws InterruptedException {
        return sessions.files(OWNER, id());
    }
}
