package dev.crucible.cli.bench;

import dev.crucible.cli.support.CliSupport;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.WebSocket;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import tools.jackson.databind.JsonNode;

/**
 * {@code crucible bench --sessions}: a cell in a live Python session over HTTP ({@code x + 1}), against the floor of
 * an HTTP round trip to the same server ({@code GET /healthz}) and a stateless {@code POST /v1/execute} of the same
 * expression in the same run; a command ({@code echo hi}) in the session against the same echo spawned by this client
 * on the host; a keystroke's echo through the session's terminal WebSocket (a program on a PTY in raw mode that
 * writes back each key, as a shell's line editor does); then, with {@code --idle N}, the memory of N idle sessions.
 */
final class SessionBench {
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
    private final URI base;
    private final String token;

    SessionBench(String url, String token) {
        this.base = URI.create(url.endsWith("/") ? url : url + "/");
        this.token = token;
    }

    JsonNode call(String method, String path, String json) throws IOException, InterruptedException {
        HttpRequest.Builder b = HttpRequest.newBuilder(base.resolve(path.substring(1))).timeout(Duration.ofMinutes(5));
        if (token != null) {
            b.header("Authorization", "Bearer " + token);
        }
        if (json != null) {
            b.header("Content-Type", "application/json");
        } else {
            b.header("X-Crucible-Request", "1");
        }
        HttpResponse<String> r = http.send(b.method(method, json == null ? HttpRequest.BodyPublishers.noBody()
                : HttpRequest.BodyPublishers.ofString(json)).build(), HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() >= 400) {
            throw new IOException(method + " " + path + " answered " + r.statusCode() + ": " + r.body());
        }
        return CliSupport.json().readTree(r.body().isEmpty() ? "{}" : r.body());
    }

    interface Step {
        void run() throws Exception;
    }

    static long[] time(int n, Step step) throws Exception {
        long[] t = new long[n];
        for (int i = 0; i < n; i++) {
            long s = System.nanoTime();
            step.run();
            t[i] = System.nanoTime() - s;
        }
        Arrays.sort(t);
        return t;
    }

    static double ms(long[] sorted, double p) {
        return sorted[(int) Math.min(sorted.length - 1, Math.floor(p / 100.0 * sorted.length))] / 1e6;
    }

    @SuppressWarnings("checkstyle:JavaNCSS") // one benchmark's script, step by step as it prints
    int run(PrintWriter out, int iterations, int warmup, int idle) throws Exception {
        String id = call("POST", "/v1/sessions", "{\"language\": \"python\"}").get("id").asString();
        String cell = "{\"code\": \"x + 1\"}";
        try {
            call("POST", "/v1/sessions/" + id + "/execute", "{\"code\": \"x = 1\"}");
            Step sessionCell = () -> {
                JsonNode r = call("POST", "/v1/sessions/" + id + "/execute", cell);
                if (!r.path("result").asString("").equals("2")) {
                    throw new IOException("unexpected answer " + r);
                }
            };
            Step floor = () -> call("GET", "/healthz", null);
            Step stateless = () -> call("POST", "/v1/execute", "{\"language\": \"python\", \"code\": \"x = 1\\nprint(x + 1)\"}");
            String echo = "{\"argv\": [\"echo\", \"hi\"]}";
            Step command = () -> {
                JsonNode r = call("POST", "/v1/sessions/" + id + "/commands", echo);
                if (!r.path("stdout").asString("").equals("hi\n")) {
                    throw new IOException("unexpected answer " + r);
                }
            };
            Step hostEcho = () -> { // the same echo, spawned by this client on the host: the baseline
                Process p = new ProcessBuilder("/bin/echo", "hi").redirectErrorStream(true).start();
                p.getInputStream().readAllBytes();
                p.waitFor();
            };
            String noCommands = null; // a session behind gVisor runs none yet: its cells are measured alone
            try {
                command.run();
            } catch (IOException e) {
                if (!e.getMessage().contains(" answered 503")) {
                    throw e;
                }
                noCommands = e.getMessage();
            }
            time(warmup, sessionCell);
            time(warmup, floor);
            if (noCommands == null) {
                time(warmup, command);
                time(warmup, hostEcho);
            }
            time(Math.min(warmup, 20), stateless);
            List<long[]> cells = new ArrayList<>();
            List<long[]> floors = new ArrayList<>();
            List<long[]> commands = new ArrayList<>();
            List<long[]> hostEchoes = new ArrayList<>();
            for (int round = 0; round < 5; round++) { // alternating, so that noise hits both
                floors.add(time(iterations / 5, floor));
                cells.add(time(iterations / 5, sessionCell));
                if (noCommands == null) {
                    commands.add(time(iterations / 5, command));
                    hostEchoes.add(time(iterations / 5, hostEcho));
                }
            }
            long[] c = merge(cells);
            long[] f = merge(floors);
            long[] s = time(Math.max(20, iterations / 10), stateless);
            out.printf("crucible bench --sessions: %d cells of x + 1 in one live Python session over HTTP (%s)%n",
                    c.length, base);
            out.printf("%-34s %8s %8s %8s %8s%n", "", "p50 ms", "p90 ms", "p99 ms", "max ms");
            report(out, "GET /healthz (HTTP floor)", f);
            report(out, "session cell x + 1", c);
            report(out, "POST /v1/execute (stateless)", s);
            out.printf("session cell p50 / HTTP floor p50: %.2f; stateless p50 / session cell p50: %.1f%n",
                    ms(c, 50) / ms(f, 50), ms(s, 50) / ms(c, 50));
            if (noCommands != null) {
                out.println("commands and the terminal: not measured, " + noCommands);
            } else {
                long[] e = merge(commands);
                long[] h = merge(hostEchoes);
                report(out, "command echo hi (POST .../commands)", e);
                report(out, "echo hi spawned by this client", h);
                out.printf("command p50 over the host's spawn p50: %+.2f ms (goal <= 2 ms); command / host spawn:"
                        + " %.2f%n", ms(e, 50) - ms(h, 50), ms(e, 50) / ms(h, 50));
                long[] k = keystrokes(id, warmup, iterations);
                report(out, "keystroke echo (terminal WebSocket)", k);
                out.printf("keystroke echo p50: %.2f ms (goal <= 2 ms); / HTTP floor p50: %.2f%n", ms(k, 50),
                        ms(k, 50) / ms(f, 50));
            }
        } finally {
            call("DELETE", "/v1/sessions/" + id, null);
        }
        creates(out, Math.max(10, iterations / 20));
        if (idle > 0) {
            idle(out, idle);
        }
        out.flush();
        return 0;
    }

    /** A keystroke's round trip: one byte into the terminal's WebSocket, until the program's echo comes back. */
    private long[] keystrokes(String id, int warmup, int iterations) throws Exception {
        long pid = call("POST", "/v1/sessions/" + id + "/commands", "{\"argv\": [\"/bin/sh\", \"-c\", \"stty -icanon -echo; exec cat\"],"
                + " \"background\": true,"
                + " \"stdin_open\": true, \"pty\": {\"rows\": 24, \"cols\": 80}}").get("pid").asLong();
        BlockingQueue<byte[]> echoes = new LinkedBlockingQueue<>();
        WebSocket.Builder builder = http.newWebSocketBuilder();
        if (token != null) {
            builder.header("Authorization", "Bearer " + token);
        }
        WebSocket socket = builder.buildAsync(URI.create(base.toString().replaceFirst("^http", "ws")
                + "v1/sessions/" + id + "/terminal?pid=" + pid), new WebSocket.Listener() {
                    @Override
                    public CompletionStage<?> onBinary(WebSocket s,
                            ByteBuffer data, boolean last) {
                        byte[] bytes = new byte[data.remaining()];
                        data.get(bytes);
                        echoes.add(bytes);
                        s.request(1);
                        return null;
                    }
                }).join();
        try {
            Step key = () -> {
                socket.sendText("k", true).join();
                int seen = 0;
                while (seen < 1) {
                    byte[] echo = echoes.poll(10, TimeUnit.SECONDS);
                    if (echo == null) {
                        throw new IOException("no echo of a keystroke in 10 s");
                    }
                    seen += echo.length;
                }
            };
            time(warmup, key);
            return time(iterations, key);
        } finally {
            socket.abort();
            call("POST", "/v1/sessions/" + id + "/processes/" + pid + "/signal", "{\"signal\": \"KILL\"}");
        }
    }

    /**
     * {@code POST /v1/sessions} and its first cell ({@code 1 + 1}), then the delete, {@code n} times each way, in turns:
     * a create that takes a spare (the defaults, a spare waited for first) against one the server makes when asked
     * (other limits: no spare fits), as a client creating now and then sees them; then {@code n} of the defaults back
     * to back, as a burst sees them (spares made as fast as they are taken, or not).
     */
    private void creates(PrintWriter out, int n) throws Exception {
        String made = "{\"language\": \"python\", \"limits\": {\"memory_mb\": 500}}";
        String fits = "{\"language\": \"python\"}";
        long[] spare = new long[n];
        long[] asked = new long[n];
        boolean spares = true;
        for (int i = 0; i < n; i++) {
            spares = spares && spareReady();
            spare[i] = createAndCell(fits);
            asked[i] = createAndCell(made);
        }
        long[] burst = new long[n];
        for (int i = 0; i < n; i++) {
            burst[i] = createAndCell(fits);
        }
        Arrays.sort(spare);
        Arrays.sort(asked);
        Arrays.sort(burst);
        out.printf("%d creates each way, a create and its first cell (1 + 1) over HTTP%s:%n", n, spares ? ""
                : " (this server keeps no spare: serve --session-spares)");
        report(out, "create + first cell, a spare", spare);
        report(out, "create + first cell, made when asked", asked);
        report(out, "create + first cell, back to back", burst);
        out.printf("a spare's create p50 / made when asked p50: %.2f (goal: a spare's <= 20 ms)%n",
                ms(spare, 50) / ms(asked, 50));
    }

    /** Whether the server has a spare ready (waited for up to 10 s). */
    private boolean spareReady() throws IOException, InterruptedException {
        long end = System.nanoTime() + 10_000_000_000L;
        while (System.nanoTime() < end) {
            HttpRequest.Builder scrape = HttpRequest.newBuilder(base.resolve("metrics"));
            if (token != null) {
                scrape.header("Authorization", "Bearer " + token);
            }
            if (http.send(scrape.build(), HttpResponse.BodyHandlers.ofString()).body().lines()
                    .anyMatch(l -> l.startsWith("crucible_sessions_spares ") && !l.endsWith(" 0.0"))) {
                return true;
            }
            Thread.sleep(20);
        }
        return false;
    }

    private long createAndCell(String body) throws Exception {
        long t0 = System.nanoTime();
        String id = call("POST", "/v1/sessions", body).get("id").asString();
        JsonNode r = call("POST", "/v1/sessions/" + id + "/execute", "{\"code\": \"1 + 1\"}");
        long took = System.nanoTime() - t0;
        call("DELETE", "/v1/sessions/" + id, null);
        if (!r.path("result").asString("").equals("2")) {
            throw new IOException("unexpected answer " + r);
        }
        return took;
    }

    private static long[] merge(List<long[]> parts) {
        long[] all = parts.stream().flatMapToLong(Arrays::stream).sorted().toArray();
        return all;
    }

    private static void report(PrintWriter out, String name, long[] t) {
        out.printf("%-34s %8.2f %8.2f %8.2f %8.2f%n", name, ms(t, 50), ms(t, 90), ms(t, 99), t[t.length - 1] / 1e6);
    }

    /**
     * Creates up to n idle sessions (fewer when the server refuses one: its budgets admit no more), measures them,
     * deletes them.
     */
    private void idle(PrintWriter out, int n) throws Exception {
        long serverBefore = call("GET", "/healthz", null).path("rss_bytes").asLong();
        long[] before = sessionMemory();
        List<String> ids = new ArrayList<>();
        long t0 = System.nanoTime();
        try {
            String refused = null;
            for (int i = 0; i < n && refused == null; i++) {
                try {
                    ids.add(call("POST", "/v1/sessions", "{\"language\": \"python\"}").get("id").asString());
                } catch (IOException e) {
                    refused = e.getMessage();
                }
            }
            if (ids.isEmpty()) {
                throw new IOException("no session was admitted: " + refused);
            }
            double createSeconds = (System.nanoTime() - t0) / 1e9;
            out.printf("admitted %d idle sessions of %d asked%s%n", ids.size(), n, refused == null ? ""
                    : "; then " + refused.replaceFirst("(?s)^(.{0,240}).*$", "$1"));
            n = ids.size();
            Thread.sleep(2000);
            long[] after = sessionMemory();
            long serverAfter = call("GET", "/healthz", null).path("rss_bytes").asLong();
            // every session still answers
            for (String id : List.of(ids.getFirst(), ids.get(ids.size() / 2), ids.getLast())) {
                call("POST", "/v1/sessions/" + id + "/execute", "{\"code\": \"1 + 1\"}");
            }
            double rss = (after[0] - before[0]) / (double) n;
            double pss = (after[1] - before[1]) / (double) n;
            double server = Math.max(0, serverAfter - serverBefore) / (double) n;
            long total = memTotal();
            out.printf("%d idle Python sessions created in %.1f s (%.1f ms each), all alive: %d processes%n", n,
                    createSeconds, createSeconds * 1000 / n, after[2] - before[2]);
            out.printf("per idle session: RSS %.1f MiB, PSS %.1f MiB (interpreter + bubblewrap), server heap/threads"
                    + " %.2f MiB%n", rss / 1048576, pss / 1048576, server / 1048576);
            out.printf("sessions that fit in this machine's %.1f GiB at PSS + server share: %d (by RSS: %d)%n",
                    total / 1073741824.0, (long) (total / (pss + server)), (long) (total / (rss + server)));
            HttpRequest.Builder scrape = HttpRequest.newBuilder(base.resolve("metrics"));
            if (token != null) {
                scrape.header("Authorization", "Bearer " + token);
            }
            String metrics = http.send(scrape.build(), HttpResponse.BodyHandlers.ofString()).body();
            out.printf("the sessions' memory on the server: budget %.0f MiB, reserved %.0f MiB (%.1f MiB a session),"
                    + " used %.0f MiB (their group's charge, %.1f MiB a session)%n", gauge(metrics, "budget"),
                    gauge(metrics, "reserved"), gauge(metrics, "reserved") / n, gauge(metrics, "used"),
                    gauge(metrics, "used") / n);
        } finally {
            for (String id : ids) {
                call("DELETE", "/v1/sessions/" + id, null);
            }
        }
    }

    /** {@code crucible_sessions_memory_<what>_bytes} from the Prometheus text, in MiB; NaN when absent. */
    private static double gauge(String metrics, String what) {
        String name = "crucible_sessions_memory_" + what + "_bytes ";
        return metrics.lines().filter(l -> l.startsWith(name)).mapToDouble(l -> Double.parseDouble(l.substring(
                name.length())) / 1048576).findFirst().orElse(Double.NaN);
    }

    /** Sum of RSS and PSS (bytes) and the count of processes owned by session uids (62000-64999). */
    static long[] sessionMemory() throws IOException {
        long rss = 0;
        long pss = 0;
        long count = 0;
        try (var procs = Files.list(Path.of("/proc"))) {
            for (Path p : procs.filter(x -> x.getFileName().toString().matches("\\d+")).toList()) {
                try {
                    int uid = -1;
                    for (String line : Files.readAllLines(p.resolve("status"))) {
                        if (line.startsWith("Uid:")) {
                            uid = Integer.parseInt(line.split("\\s+")[1]);
                        }
                    }
                    if (uid < 62000 || uid >= 65000) {
                        continue;
                    }
                    count++;
                    for (String line : Files.readAllLines(p.resolve("smaps_rollup"))) {
                        if (line.startsWith("Rss:")) {
                            rss += Long.parseLong(line.replaceAll("\\D", "")) * 1024;
                        } else if (line.startsWith("Pss:")) {
                            pss += Long.parseLong(line.replaceAll("\\D", "")) * 1024;
                        }
                    }
                } catch (IOException | RuntimeException e) {
                    // gone
                }
            }
        }
        return new long[] {rss, pss, count};
    }

    static long memTotal() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/meminfo"))) {
            if (line.startsWith("MemTotal:")) {
                return Long.parseLong(line.replaceAll("\\D", "")) * 1024;
            }
        }
        return 0;
    }
}
