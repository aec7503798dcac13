package dev.crucible.sandbox.bwrap;

import dev.crucible.os.NetNamespace;
import dev.crucible.sandbox.SandboxSpec;
import dev.crucible.sandbox.launch.ProcessSpawner;
import java.io.IOException;

/**
 * A sandbox's own network namespace and the proxy's serving of its listener (none for a session without egress),
 * closed when the sandbox ends (see docs/sandbox-recipe.md, section 20).
 */
record SandboxNetwork(NetNamespace namespace, AutoCloseable serving) implements AutoCloseable {

    /**
     * For {@code spec}, which has egress: a network namespace of the server's with the proxy's listener in it, made on
     * the launcher thread, the listener handed to the spec's proxy (connections queue until the program makes them).
     * The namespace's descriptor, which the launcher opens by path at some moment after the spawn, and the listener
     * live until the sandbox ends. Null for a spec without egress; refused with {@code unavailable} when not null.
     */
    static SandboxNetwork open(SandboxSpec spec, ProcessSpawner spawner, String unavailable)
            throws IOException, InterruptedException {
        if (spec.egress() == null) {
            return null;
        }
        if (unavailable != null) {
            throw new IOException(unavailable);
        }
        NetNamespace netns = spawner.onLauncherThread(() -> NetNamespace.create(SandboxSpec.PROXY_PORT));
        return new SandboxNetwork(netns, spec.egress().serve(netns.listener(), "sandbox", netns));
    }

    /**
     * A namespace of the server's with nothing listening in it, for a session's sandbox without egress: its own servers
     * reachable from the server ({@link NetNamespace#socket()}), nothing out.
     */
    static SandboxNetwork own(ProcessSpawner spawner) throws IOException, InterruptedException {
        NetNamespace netns = spawner.onLauncherThread(NetNamespace::create);
        return new SandboxNetwork(netns, netns);
    }

    @Override
    public void close() throws Exception {
        serving.close(); // the listener and the namespace's descriptor
    }
}
