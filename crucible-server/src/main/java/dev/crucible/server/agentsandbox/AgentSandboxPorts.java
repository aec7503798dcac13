package dev.crucible.server.agentsandbox;

import java.util.List;

/**
 * The ports of agent-sandbox's runtime contracts ({@code --agent-sandbox-ports RUNTIME,REST,GRPC}): the python-runtime
 * contract's, sandboxd's REST filesystem's and sandboxd's gRPC process service's (reserved: not served yet). Port 0
 * picks a free one.
 */
public record AgentSandboxPorts(int runtime, int rest, int grpc) {
    /** The contracts' own: 8888, 8080, 9090. */
    public static final AgentSandboxPorts DEFAULTS = new AgentSandboxPorts(8888, 8080, 9090);

    public AgentSandboxPorts {
        for (int port : List.of(runtime, rest, grpc)) {
            if (port < 0 || port > 65_535) {
                throw new IllegalArgumentException("a port is 0 (a free one) to 65535, not " + port);
            }
        }
    }

    /**
     * Reads {@code RUNTIME,REST,GRPC}, e.g. {@code 8888,8080,9090}.
     *
     * @throws IllegalArgumentException for anything else, saying what is expected
     */
    public static AgentSandboxPorts parse(String value) {
        String[] parts = value == null ? new String[0] : value.split(",", -1);
        if (parts.length != 3) {
            throw new IllegalArgumentException("--agent-sandbox-ports is RUNTIME,REST,GRPC (three ports, e.g."
                    + " 8888,8080,9090), not '" + value + "'");
        }
        try {
            return new AgentSandboxPorts(Integer.parseInt(parts[0].strip()), Integer.parseInt(parts[1].strip()),
                    Integer.parseInt(parts[2].strip()));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--agent-sandbox-ports is three port numbers, RUNTIME,REST,GRPC (e.g."
                    + " 8888,8080,9090), not '" + value + "'", e);
        }
    }
}
