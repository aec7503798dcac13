package dev.crucible.cli.session;

import dev.crucible.session.SessionProcesses;
import dev.crucible.session.process.BackgroundProcess;
import dev.crucible.session.process.CommandRequest;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.WebSocket;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Consumer;
import org.jline.terminal.Attributes;
import org.jline.terminal.Size;
import org.jline.terminal.Terminal;
import tools.jackson.databind.JsonNode;

/**
 * {@code crucible session --shell}: the user's terminal attached to a login shell on a terminal of the session's
 * sandbox. Raw mode with ISIG off, so Ctrl-C, Ctrl-Z and Ctrl-\ reach the program in the sandbox, not this one; the
 * window's size follows SIGWINCH; {@code ~.} at the start of a line leaves (as ssh's escape), and the shell's end
 * ends it. Locally through the session's processes, on a server through its terminal WebSocket.
 */
final class ShellAttach {
    private static final String SHELL = "if command -v bash >/dev/null 2>&1; then exec bash -l; fi; exec sh -l";

    private ShellAttach() {}

    /** A shell on a terminal in the session: keystrokes in, its size, its end. */
    interface Link {
        void input(byte[] bytes) throws Exception;

        void resize(int rows, int cols) throws Exception;

        /** Hangs the shell up (SIGHUP), as closing a terminal window does. */
        void hangUp();
    }

    /** Opens a shell of this size; its output goes to {@code output}, and {@code ended} completes with its end. */
    @FunctionalInterface
    interface Opener {
        Link open(int rows, int cols, Consumer<byte[]> output, CompletableFuture<String> ended) throws Exception;
    }

    /**
     * Runs the attachment until the shell ends or the user leaves.
     *
     * @return 0, or 1 when the shell could not start
     */
    static int run(Terminal terminal, Opener opener) throws Exception {
        Size size = terminal.getSize();
        OutputStream screen = terminal.output();
        CompletableFuture<String> ended = new CompletableFuture<>();
        Link link = opener.open(size.getRows() > 0 ? size.getRows() : 24, size.getColumns() > 0 ? size.getColumns()
                : 80, bytes -> {
                    try {
                        screen.write(bytes);
                        screen.flush();
                    } catch (IOException e) {
                        ended.complete("the screen closed");
                    }
                }, ended);
        Attributes saved = terminal.enterRawMode();
        Attributes raw = terminal.getAttributes();
        raw.setLocalFlag(Attributes.LocalFlag.ISIG, false); // Ctrl-C is a byte for the sandbox
        terminal.setAttributes(raw);
        Terminal.SignalHandler previous = terminal.handle(Terminal.Signal.WINCH, s -> {
            try {
                link.resize(terminal.getSize().getRows(), terminal.getSize().getColumns());
            } catch (Exception e) {
                // the shell has gone: its end is on its way
            }
        });
        Thread keys = Thread.ofVirtual().name("crucible-shell-keys").start(() -> keys(terminal.input(), link, ended));
        try {
            String why = ended.get();
            terminal.setAttributes(saved);
            terminal.writer().println("\r\n[crucible: " + why + "]");
            terminal.writer().flush();
            return 0;
        } finally {
            terminal.setAttributes(saved);
            terminal.handle(Terminal.Signal.WINCH, previous);
            link.hangUp();
            keys.interrupt();
        }
    }

    /** Keystrokes to the shell, watching for {@code ~.} after a newline (or at the start). */
    private static void keys(InputStream in, Link link, CompletableFuture<String> ended) {
        byte[] buffer = new byte[4096];
        boolean lineStart = true;
        boolean tilde = false;
        try {
            int n;
            while (!ended.isDone() && (n = in.read(buffer)) >= 0) {
                ByteArrayOutputStream keys = new ByteArrayOutputStream(n + 1); // one write a read
                for (int i = 0; i < n; i++) {
                    byte b = buffer[i];
                    if (tilde && b == '.') {
                        ended.complete("left (~.)");
                        return;
                    }
                    if (tilde && b != '~') {
                        keys.write('~'); // not an escape after all: the tilde was the user's
                    }
                    tilde = lineStart && b == '~' && !tilde;
                    if (!tilde) {
                        keys.write(b);
                    }
                    lineStart = b == '\r' || b == '\n';
                }
                if (keys.size() > 0) {
                    link.input(keys.toByteArray());
                }
            }
            ended.complete("the terminal's input ended");
        } catch (Exception e) {
            ended.complete("cannot send keystrokes: " + e.getMessage());
        }
    }

    /** A call to the server's API: a JSON answer, or a failure for a refusal. */
    @FunctionalInterface
    interface Caller {
        JsonNode call(String method, String path, Object body) throws Exception;
    }

    /** A shell through the local engine's session processes. */
    @SuppressWarnings("checkstyle:inlineQualifiedName") // JLine's Terminal is the one imported here
    static Opener local(SessionProcesses processes) {
        return (rows, cols, output, ended) -> {
            BackgroundProcess process = processes.get(processes.start(new CommandRequest(null, List.of("/bin/sh", "-c",
                    SHELL), Map.of("TERM", termName()), null, null, null, null, true, true,
                    new dev.crucible.session.process.Terminal(rows, cols))).pid());
            Thread.ofVirtual().name("crucible-shell-output").start(() -> {
                long next = 0;
                try {
                    while (true) {
                        BackgroundProcess.Output out = process.read(next, 64 * 1024, 1_000);
                        out.chunks().forEach(c -> output.accept(c.bytes()));
                        next = out.next();
                        if (out.ended()) {
                            var info = process.info();
                            ended.complete(info.exitCode() != null ? "exit " + info.exitCode() : "ended");
                            return;
                        }
                    }
                } catch (InterruptedException e) {
                    ended.complete("interrupted");
                }
            });
            return new Link() {
                @Override
                public void input(byte[] bytes) throws Exception {
                    processes.write(process, bytes, false);
                }

                @Override
                public void resize(int r, int c) throws Exception {
                    processes.resize(process, new dev.crucible.session.process.Terminal(r, c));
                }

                @Override
                public void hangUp() {
                    try {
                        processes.signal(process, "HUP", true);
                    } catch (RuntimeException | InterruptedException e) {
                        // ended already
                    }
                }
            };
        };
    }

    /**
     * A shell on a server: started as a background process on a terminal ({@code POST …/commands} with
     * {@code pty}), attached through {@code GET …/terminal?pid=} upgraded to a WebSocket, sized with {@code POST
     * …/resize}.
     */
    static Opener remote(HttpClient http, URI base, String token, String session, Caller call) {
        return (rows, cols, output, ended) -> {
            long pid = call.call("POST", "/v1/sessions/" + session + "/commands", Map.of("argv",
                    List.of("/bin/sh", "-c", SHELL), "env", Map.of("TERM", termName()), "background", true,
                    "stdin_open", true, "pty", Map.of("rows", rows, "cols", cols))).get("pid").asLong();
            URI ws = URI.create(base.toString().replaceFirst("^http", "ws").replaceAll("/$", "") + "/v1/sessions/"
                    + session + "/terminal?pid=" + pid);
            WebSocket.Builder builder = http.newWebSocketBuilder().connectTimeout(Duration.ofSeconds(10));
            if (token != null && !token.isBlank()) {
                builder.header("Authorization", "Bearer " + token);
            }
            WebSocket socket = builder.buildAsync(ws, new WebSocket.Listener() {
                @Override
                public CompletionStage<?> onBinary(WebSocket s, ByteBuffer data, boolean last) {
                    byte[] bytes = new byte[data.remaining()];
                    data.get(bytes);
                    output.accept(bytes);
                    s.request(1);
                    return null;
                }

                @Override
                public CompletionStage<?> onClose(WebSocket s, int status, String reason) {
                    ended.complete(reason == null || reason.isBlank() ? "closed (" + status + ")" : reason);
                    return null;
                }

                @Override
                public void onError(WebSocket s, Throwable error) {
                    ended.complete("the terminal's connection failed: " + error.getMessage());
                }
            }).join();
            return new Link() {
                @Override
                public void input(byte[] bytes) {
                    socket.sendBinary(ByteBuffer.wrap(bytes), true).join();
                }

                @Override
                public void resize(int r, int c) throws Exception {
                    call.call("POST", "/v1/sessions/" + session + "/processes/" + pid + "/resize",
                            Map.of("rows", r, "cols", c));
                }

                @Override
                public void hangUp() {
                    try {
                        call.call("POST", "/v1/sessions/" + session + "/processes/" + pid + "/signal",
                                Map.of("signal", "HUP"));
                    } catch (Exception e) {
                        // ended already
                    }
                    socket.abort();
                }
            };
        };
    }

    /** The user's terminal type for the shell ($TERM), xterm-256color when unknown. */
    private static String termName() {
        String term = System.getenv("TERM");
        return term == null || term.isBlank() || term.startsWith("dumb") ? "xterm-256color" : term;
    }
}
