package dev.crucible.server;

import dev.crucible.TestHost;
import dev.crucible.testhost.Capability;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * E2B's Desktop SDK from npm ({@code @e2b/desktop}), unmodified, driven by clients/node-tests/desktop.mjs against the
 * {@code desktop} template: the SDK starts Xvfb and XFCE in the session, shoots with scrot (the test finds a red window
 * by its pixels), clicks, types into it and reads what the typed command wrote, scrolls, drags, launches xterm, starts
 * x11vnc and noVNC (served through the authenticated ports proxy), and finds neither the display nor VNC from the host
 * or from another sandbox.
 */
class DesktopSdkTest {
    static CrucibleServer server;

    @BeforeAll
    static void start() {
        server = CrucibleServer.start(Http.config().withPort(0).withTokens(Set.of(E2bSdkTest.TOKEN))
                .withPool(Map.of()), TestHost.crucible());
    }

    @AfterAll
    static void stop() {
        server.close();
    }

    @Test
    void desktopSdkDrivesADesktopSession() throws Exception {
        Capability.DESKTOP.require();
        Capability.SESSION_ROOTS.require("root".equals(System.getProperty("user.name")) ? null
                : "not root: a desktop needs a session with a root of its own");
        E2bSdkTest.assertRun("desktop", E2bSdkTest.nodeScript("desktop.mjs", "all", server.port(), Map.of()));
    }
}
