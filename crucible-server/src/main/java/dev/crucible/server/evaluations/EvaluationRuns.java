package dev.crucible.server.evaluations;

import com.fasterxml.jackson.annotation.JsonProperty;
import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.eval.Judge;
import dev.crucible.eval.dataset.DatasetRun;
import dev.crucible.eval.dataset.Sandboxes;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.IntSupplier;
import tools.jackson.databind.json.JsonMapper;

/**
 * The evaluations a server runs (see the package). Each is a directory {@code <data dir>/evaluations/<id>/} (0700, the
 * server's) holding {@code problems.jsonl}, {@code samples.jsonl}, {@code results.jsonl} as {@code DatasetRun} writes
 * it, and {@code run.json} (its owner, as the hash of its token, and its {@link EvaluationInfo}; written whole, then
 * renamed into place). A run judges its samples on this server's engine, at half its admission's turns so that
 * requests keep theirs, and at most {@value #MAX_RUNNING} runs go at once. Another token's run is a 404. Thread-safe.
 */
public final class EvaluationRuns implements AutoCloseable {
    /** Runs in progress at once on one server; one more is a 429. */
    static final int MAX_RUNNING = 2;
    private static final long DEFAULT_TIMEOUT_MS = 10_000;
    private static final long MAX_TIMEOUT_MS = 120_000;
    private static final String RUN = "run.json";
    private static final SecureRandom RANDOM = new SecureRandom();

    /** What {@code run.json} holds. */
    record Stored(@JsonProperty("owner") String owner, @JsonProperty("info") EvaluationInfo info) {}

    /** A run in progress here: its thread and what it has judged so far. */
    private record Live(Thread thread, AtomicReference<EvaluationInfo> info) {}

    private final Path root;
    private final Judge judge;
    private final IntSupplier turns;
    private final JsonMapper json;
    private final InstantSource clock;
    private final Map<String, Live> live = new ConcurrentHashMap<>();

    /**
     * @param turns how many runs the server's admission lets go at once (a run takes half of them)
     * @throws IOException when {@code dataDir/evaluations} cannot be made
     */
    public EvaluationRuns(Path dataDir, Judge judge, IntSupplier turns, JsonMapper json, InstantSource clock)
            throws IOException {
        this.root = dataDir.resolve("evaluations");
        Files.createDirectories(root, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        this.judge = judge;
        this.turns = turns;
        this.json = json;
        this.clock = clock;
    }

    /**
     * Starts a run of {@code request} for {@code owner}, judged in the background.
     *
     * @throws RequestException 400 for an unknown format, no problems, or a dataset that yields no sample; 422 for a
     *     timeout out of range; 429 while {@value #MAX_RUNNING} runs go
     */
    public synchronized EvaluationInfo start(String owner, EvaluationRequest request) throws IOException {
        List<Integer> k = request.k() == null || request.k().isEmpty() ? List.of(1) : List.copyOf(request.k());
        long timeoutMs = request.timeoutMs() == null ? DEFAULT_TIMEOUT_MS : request.timeoutMs();
        if (request.format() == null || request.problems() == null || request.problems().isBlank()) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "format (humaneval, mbpp or stdio) and problems (the"
                    + " problems file's JSONL) are required; samples (JSONL) too, unless the dataset has reference"
                    + " solutions");
        }
        if (k.size() > 16 || k.stream().anyMatch(v -> v == null || v < 1)) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "k is a list of at most 16 numbers from 1, e.g. [1, 10]");
        }
        if (timeoutMs < 1 || timeoutMs > MAX_TIMEOUT_MS) {
            throw new RequestException(ErrorCode.INVALID_LIMITS, "timeout_ms is from 1 to " + MAX_TIMEOUT_MS);
        }
        if (live.size() >= MAX_RUNNING) {
            throw new RequestException(ErrorCode.TOO_MANY_REQUESTS, MAX_RUNNING + " evaluations are running on this"
                    + " server: wait for one to end (GET /v1/evaluations), or stop one (DELETE /v1/evaluations/{id})");
        }
        String id = HexFormat.of().formatHex(random());
        Path dir = Files.createDirectory(root.resolve(id),
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        Path problems = Files.writeString(dir.resolve("problems.jsonl"), request.problems(), StandardCharsets.UTF_8);
        Path samples = request.samples() == null ? null
                : Files.writeString(dir.resolve("samples.jsonl"), request.samples(), StandardCharsets.UTF_8);
        int total;
        try {
            total = DatasetRun.sampleIds(request.format(), problems, samples).size();
        } catch (IllegalArgumentException e) {
            delete(dir);
            throw new RequestException(ErrorCode.INVALID_REQUEST, e.getMessage());
        }
        if (total == 0) {
            delete(dir);
            throw new RequestException(ErrorCode.INVALID_REQUEST, "no sample to judge: no problem line of the " + request
                    .format() + " format" + (samples == null ? "" : ", or no sample naming one of its problems"));
        }
        EvaluationInfo info = new EvaluationInfo(id, request.format(), "running", total, 0, 0, k, clock.instant(),
                null, null, null);
        DatasetRun.Options options = new DatasetRun.Options(request.format(), problems, samples, k,
                dir.resolve("results.jsonl"), Math.max(1, turns.getAsInt() / 2), timeoutMs, request.image());
        AtomicReference<EvaluationInfo> now = new AtomicReference<>(info);
        Thread thread = Thread.ofPlatform().name("crucible-evaluation-" + id.substring(0, 8)).daemon().unstarted(
                () -> run(dir, owner, options, now));
        live.put(id, new Live(thread, now)); // before run.json says running: no reader finds it running and not live
        try {
            write(dir, new Stored(owner, info));
        } catch (IOException | RuntimeException e) {
            live.remove(id);
            delete(dir);
            throw e;
        }
        thread.start();
        return info;
    }

    private static byte[] random() {
        byte[] bytes = new byte[16];
        RANDOM.nextBytes(bytes);
        return bytes;
    }

    private void run(Path dir, String owner, DatasetRun.Options options, AtomicReference<EvaluationInfo> now) {
        String id = now.get().id();
        EvaluationInfo end;
        try {
            DatasetRun.Summary summary = new DatasetRun(Sandboxes.local(judge, options.concurrency())).run(options,
                    (done, total, passed) -> now.updateAndGet(i -> i.progressed(done, passed)), new ArrayList<>());
            boolean stopped = Thread.currentThread().isInterrupted();
            end = now.get().ended(stopped ? "stopped" : "done", clock.instant(), summary, null);
        } catch (InterruptedException e) {
            end = now.get().ended("stopped", clock.instant(), null, null);
        } catch (IOException | RuntimeException e) {
            end = now.get().ended("failed", clock.instant(), null, e.getMessage());
        }
        try {
            if (Files.isDirectory(dir)) { // not deleted meanwhile
                write(dir, new Stored(owner, end));
            }
        } catch (IOException e) {
            System.err.println("crucible: could not record the end of evaluation " + id + ": " + e.getMessage());
        } finally {
            live.remove(id);
        }
    }

    /** The runs of {@code owner}, newest first. */
    public List<EvaluationInfo> list(String owner) throws IOException {
        List<EvaluationInfo> all = new ArrayList<>();
        try (DirectoryStream<Path> dirs = Files.newDirectoryStream(root, p -> p.getFileName().toString().matches(
                "[0-9a-f]{32}"))) {
            for (Path dir : dirs) {
                Stored stored = read(dir);
                if (stored != null && stored.owner().equals(owner)) {
                    all.add(current(stored.info()));
                }
            }
        }
        all.sort(Comparator.comparing(EvaluationInfo::createdAt).reversed());
        return all;
    }

    /** @throws RequestException 404 for no such run, or another token's */
    public EvaluationInfo get(String owner, String id) throws IOException {
        return current(owned(owner, id).info());
    }

    /** The run's results file ({@code crucible eval dataset --out}'s form), as far as it has got. */
    public Path results(String owner, String id) throws IOException {
        owned(owner, id);
        Path results = root.resolve(id).resolve("results.jsonl");
        return Files.exists(results) ? results : null;
    }

    /** Stops the run if it goes on, and forgets it with its files. */
    public void delete(String owner, String id) throws IOException, InterruptedException {
        owned(owner, id);
        Live running = live.get(id);
        if (running != null) {
            running.thread().interrupt();
            running.thread().join(30_000);
        }
        delete(root.resolve(id));
    }

    /**
     * What is live wins over what {@code run.json} says; a run recorded as running that is not live here stopped. A run
     * records its end before it leaves {@link #live}: one read as running that has just left is read again.
     */
    private EvaluationInfo current(EvaluationInfo stored) throws IOException {
        Live running = live.get(stored.id());
        if (running != null) {
            return running.info().get();
        }
        if (stored.state().equals("running")) {
            Stored again = read(root.resolve(stored.id()));
            stored = again == null ? stored : again.info();
        }
        return stored.state().equals("running") ? stored.ended("stopped", null, null, "the server stopped during it")
                : stored;
    }

    private Stored owned(String owner, String id) throws IOException {
        Stored stored = id.matches("[0-9a-f]{32}") ? read(root.resolve(id)) : null;
        if (stored == null || !stored.owner().equals(owner)) {
            throw new RequestException(ErrorCode.NOT_FOUND, "no evaluation " + id + " (GET /v1/evaluations lists"
                    + " yours)");
        }
        return stored;
    }

    private Stored read(Path dir) throws IOException {
        try {
            return json.readValue(Files.readString(dir.resolve(RUN)), Stored.class);
        } catch (NoSuchFileException e) {
            return null; // being made, or being deleted
        }
    }

    private void write(Path dir, Stored stored) throws IOException {
        Path next = dir.resolve(RUN + ".new");
        Files.writeString(next, json.writeValueAsString(stored));
        Files.move(next, dir.resolve(RUN), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }

    private static void delete(Path dir) throws IOException {
        try (var files = Files.walk(dir)) {
            for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (NoSuchFileException e) {
            // gone already
        } catch (UncheckedIOException e) {
            throw e.getCause();
        }
    }

    /** Stops every run going here; each is recorded as {@code stopped}, its judged samples kept. */
    @Override
    public void close() {
        for (Live running : live.values()) {
            running.thread().interrupt();
        }
        for (Live running : live.values()) {
            try {
                running.thread().join(10_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }
}
