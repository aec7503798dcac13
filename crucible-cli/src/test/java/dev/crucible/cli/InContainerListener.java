package dev.crucible.cli;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;

/**
 * The hostile catalogue's listener "on the host", held where the sandboxes' host is: in the container, by its Python
 * ({@code podman exec}), in its network namespace (a TCP listener on its loopback, or an abstract unix socket, which
 * is scoped by network namespace). It counts the connections it could accept; none is the expected answer.
 */
final class InContainerListener implements AutoCloseable {
    private static final String SCRIPT = String.join("\n",
            "import socket, sys",
            "if sys.argv[1] == 'tcp':",
            "    s = socket.socket(); s.bind(('127.0.0.1', 0)); port = s.getsockname()[1]",
            "else:",
            "    s = socket.socket(socket.AF_UNIX); s.bind('\\0sbx-abstract-test'); port = 9",
            "s.listen(16); print(port, flush=True); sys.stdin.read(); s.setblocking(False); n = 0",
            "while True:",
            "    try: s.accept(); n += 1",
            "    except BlockingIOError: break",
            "print(n, flush=True)");

    private final Process python;
    private final BufferedReader out;
    private final int port;

    private InContainerListener(Process python, BufferedReader out, int port) {
        this.python = python;
        this.out = out;
        this.port = port;
    }

    /** A listener of {@code kind} ({@code tcp}, {@code abstract}), or none (port 9, nothing listens) for anything else. */
    static InContainerListener open(PodmanContainer container, String kind) throws IOException {
        if (!kind.equals("tcp") && !kind.equals("abstract")) {
            return new InContainerListener(null, null, 9);
        }
        Process p = container.exec("python3", "-c", SCRIPT, kind);
        BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        String first = out.readLine();
        if (first == null) {
            p.destroyForcibly();
            throw new IOException("the listener did not start in the container");
        }
        return new InContainerListener(p, out, Integer.parseInt(first.strip()));
    }

    int port() {
        return port;
    }

    /** Stops listening and says how many connections were waiting. */
    int connections() throws IOException, InterruptedException {
        if (python == null) {
            return 0;
        }
        python.getOutputStream().close();
        String n = out.readLine();
        python.waitFor();
        return Integer.parseInt(n.strip());
    }

    @Override
    public void close() {
        if (python != null) {
            python.destroyForcibly();
        }
    }
}
