package dev.crucible.egress.proxy;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.List;

/**
 * How the egress proxy turns a host name into addresses. The proxy resolves once, checks every address, and connects
 * only to checked ones (never resolving again: DNS rebinding). Tests give a fixed table; the server uses
 * {@link #system()}. Implementations must be thread-safe.
 */
@FunctionalInterface
public interface EgressResolver {
    /**
     * The addresses of {@code host} (a lower-case name, never an IP literal), in the order to try them.
     *
     * @throws UnknownHostException when the name does not resolve
     */
    List<InetAddress> resolve(String host) throws UnknownHostException;

    /** The JDK's resolver (the host's resolver configuration and cache). */
    static EgressResolver system() {
        return host -> List.of(InetAddress.getAllByName(host));
    }
}
