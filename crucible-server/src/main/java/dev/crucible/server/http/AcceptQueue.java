package dev.crucible.server.http;

import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.util.component.LifeCycle;

/**
 * A listener's accept queue deep enough for a burst: Jetty leaves the backlog to the JDK, whose default is 50, so a
 * burst of hundreds of connections at once (a training loop's creates) overflowed it while the server's cores were
 * busy, and the kernel dropped or reset the rest. {@link #DEPTH} is asked for (the kernel caps it at
 * {@code net.core.somaxconn}, 4096 on current kernels).
 */
public final class AcceptQueue {
    public static final int DEPTH = 4096;

    private AcceptQueue() {}

    /** Gives every {@link ServerConnector} of {@code jetty} a backlog of {@link #DEPTH}, before they open. */
    public static void deepen(Server jetty) {
        jetty.addEventListener(new LifeCycle.Listener() {
            @Override
            public void lifeCycleStarting(LifeCycle event) {
                for (Connector connector : jetty.getConnectors()) {
                    if (connector instanceof ServerConnector server) {
                        server.setAcceptQueueSize(DEPTH);
                    }
                }
            }
        });
    }
}
