package dev.crucible.server.e2b;

import dev.crucible.error.RequestException;
import dev.crucible.sandbox.Sandbox;
import dev.crucible.session.SessionProcesses;
import dev.crucible.session.process.BackgroundProcess;
import dev.crucible.session.process.Supervisor;
import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.io.OutputStream;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.Deque;

/**
 * A background process of a session seen as a sandbox's interpreter: its stdin is written through the supervisor, its
 * stdout read from the output it keeps (stderr, the agent's own complaints, left there), signals go to its process
 * group. So the agent protocol's {@code Interpreter} drives a second interpreter in the same sandbox: a code context
 * with its own variables, the sandbox's files and limits.
 */
final class ProcessBox implements Sandbox.Interactive {
    private static final long WAIT_MS = 60_000;
    private static final int CHUNK = Supervisor.RING_BYTES;

    private final SessionProcesses processes;
    private final BackgroundProcess process;

    ProcessBox(SessionProcesses processes, BackgroundProcess process) {
        this.processes = processes;
        this.process = process;
    }

    long pid() {
        return process.pid();
    }

    @Override
    public OutputStream stdin() {
        return new OutputStream() {
            @Override
            public void write(int b) throws IOException {
                write(new byte[] {(byte) b}, 0, 1);
            }

            @Override
            public void write(byte[] b, int off, int len) throws IOException {
                try {
                    processes.write(process, Arrays.copyOfRange(b, off, off + len), false);
                } catch (RequestException e) {
                    throw new IOException(e.getMessage(), e);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new InterruptedIOException("interrupted");
                }
            }
        };
    }

    @Override
    public InputStream stdout() {
        return new InputStream() {
            private final Deque<byte[]> ready = new ArrayDeque<>();
            private int at;
            private long next;

            @Override
            public int read() throws IOException {
                byte[] one = new byte[1];
                return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
            }

            @Override
            public int read(byte[] b, int off, int len) throws IOException {
                while (ready.isEmpty()) {
                    BackgroundProcess.Output out;
                    try {
                        out = process.read(next, CHUNK, WAIT_MS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw new InterruptedIOException("interrupted");
                    }
                    if (out.missed() > 0) {
                        throw new IOException("the context's answers overran the output kept for it");
                    }
                    out.chunks().stream().filter(c -> !c.stderr()).forEach(c -> ready.add(c.bytes()));
                    next = out.next();
                    if (ready.isEmpty() && out.ended()) {
                        return -1;
                    }
                }
                byte[] head = ready.peek();
                int n = Math.min(len, head.length - at);
                System.arraycopy(head, at, b, off, n);
                at += n;
                if (at == head.length) {
                    ready.poll();
                    at = 0;
                }
                return n;
            }
        };
    }

    @Override
    public boolean alive() {
        return process.running();
    }

    @Override
    public int signal(int signal) {
        try {
            return processes.signal(process, signal, true) ? 1 : 0;
        } catch (RequestException e) {
            return 0;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return 0;
        }
    }

    @Override
    public long oomKills() {
        return 0; // the session's cgroup counts them; a context's own are not told apart
    }

    @Override
    public Integer exitCode() {
        return process.info().exitCode();
    }

    @Override
    public void close() {
        if (process.running()) {
            signal(9);
        }
    }
}
