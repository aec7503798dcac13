package dev.crucible.server.desktop;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.session.SessionManager;
import dev.crucible.session.process.CommandRequest;
import dev.crucible.session.process.CommandResult;
import dev.crucible.session.spec.SessionLimits;
import java.util.Map;

/**
 * What E2B's Desktop SDK ({@code @e2b/desktop}) looks for in a sandbox that Debian's packages put elsewhere, made in a
 * session's own root by its root user: noVNC at {@code /opt/noVNC} (Debian's {@code /usr/share/novnc}, whose
 * {@code utils/novnc_proxy} the SDK runs) and an {@code xterm.desktop} entry for {@code gtk-launch xterm} (Debian
 * names it {@code debian-xterm.desktop}). Everything else (Xvfb, xdpyinfo, xdotool, scrot, x11vnc, xrandr, XFCE,
 * netstat) is the host's {@code /usr}, read-only under the session's overlay; the session's {@code /opt} and
 * {@code /usr/local} are its own, so nothing is written on the host.
 */
public final class DesktopRoot {
    /** The script root runs inside the session; idempotent, so a resumed or forked session may run it again. */
    static final String SCRIPT = String.join("\n",
            "set -e",
            "test -x /usr/share/novnc/utils/novnc_proxy || { echo 'noVNC is not installed on the host:"
                    + " apt-get install novnc (./crucible does)' >&2; exit 3; }",
            "mkdir -p /opt /usr/local/share/applications",
            "test -s /etc/machine-id || tr -d - < /proc/sys/kernel/random/uuid > /etc/machine-id",
            "ln -sfn /usr/share/novnc /opt/noVNC",
            "cd /usr/local/share/applications",
            "test -e xterm.desktop || ln -s /usr/share/applications/debian-xterm.desktop xterm.desktop",
            "");

    /**
     * A desktop session's limits: XFCE, a browser and their threads want more than a code session's defaults (2 GiB and
     * 1,024 tasks, E2B's desktop sandbox being 2 GiB).
     */
    public static final SessionLimits LIMITS = SessionLimits.DEFAULT.with(2048, 1024, null, null, null);

    private DesktopRoot() {}

    /**
     * Makes session {@code id}'s root ready for the Desktop SDK.
     *
     * @throws RequestException {@code runtime_unavailable} when the session
     *     has no root of its own (its {@code /opt} is not its own) or the host lacks noVNC, saying how to fix it;
     *     {@code interrupted}
     */
    public static void prepare(SessionManager sessions, String owner, String id) {
        String why;
        try {
            CommandResult done = sessions.command(owner, id, new CommandRequest(SCRIPT, null, Map.of(), "/", 30_000L,
                    null, CommandRequest.User.ROOT, false));
            if (done.exitCode() != null && done.exitCode() == 0) {
                return;
            }
            why = done.stderr().strip();
        } catch (RequestException e) {
            why = e.getMessage();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RequestException(ErrorCode.INTERRUPTED, "interrupted while the desktop's root was prepared");
        }
        throw new RequestException(ErrorCode.RUNTIME_UNAVAILABLE, "a desktop needs a session with a root of its own"
                + " (the server as root on Linux 5.19+; docs/sessions.md) and the desktop packages on the host"
                + " (./crucible installs them): " + why);
    }
}
