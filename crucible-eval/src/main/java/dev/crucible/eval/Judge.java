package dev.crucible.eval;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.exec.ExecuteRequest;
import dev.crucible.exec.ExecuteResult;
import dev.crucible.exec.Executor;
import dev.crucible.exec.FileInput;
import dev.crucible.exec.Program;
import dev.crucible.runtime.LanguageRuntime;
import dev.crucible.runtime.LimitsSpec;
import dev.crucible.sandbox.Limits;
import dev.crucible.sandbox.Verdict;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * Judges one program against test cases: each case gives stdin and/or test code appended to the program, and an
 * expected stdout compared by a {@link Comparison}. A compiled program without test code is compiled once and run
 * per case; an interpreted one runs through the executor (and its warm pool). The first failure stops the run
 * unless {@code run_all_cases}.
 */
public final class Judge {
    public static final int MAX_CASES = 1000;

    /**
     * A turn at the sandbox for one run of a request's, as the caller's admission gives it (the server's: fair between
     * tokens, queued, 429 with a Retry-After when full); {@link #OPEN} where nothing is shared (a CLI, a test).
     */
    @FunctionalInterface
    public interface Gate {
        /** No admission: every run goes straight to the sandbox. */
        Gate OPEN = timeoutMs -> () -> { };

        /** A turn for a run of {@code timeoutMs}; close it when the run ends. */
        AutoCloseable enter(long timeoutMs) throws InterruptedException;

        /**
         * How many runs of one request wait for their turns at once: {@link #PARALLEL}, or fewer where a caller may
         * hold fewer turns (a request never crowds itself out of its own token's share).
         */
        default int parallel() {
            return PARALLEL;
        }

        /** This gate, {@code runs} of a request at once at most. */
        default Gate atMost(int runs) {
            Gate gate = this;
            int parallel = Math.clamp(runs, 1, PARALLEL);
            return new Gate() {
                @Override
                public AutoCloseable enter(long timeoutMs) throws InterruptedException {
                    return gate.enter(timeoutMs);
                }

                @Override
                public int parallel() {
                    return parallel;
                }
            };
        }

        /** Runs {@code run} within a turn for {@code timeoutMs}. */
        default <T> T through(long timeoutMs, CaseRun<T> run) throws InterruptedException {
            AutoCloseable turn = enter(timeoutMs);
            try {
                return run.run();
            } finally {
                try {
                    turn.close();
                } catch (Exception e) {
                    throw new IllegalStateException("giving back a turn failed", e);
                }
            }
        }
    }

    /** One run under a {@link Gate}'s turn. */
    @FunctionalInterface
    public interface CaseRun<T> {
        T run() throws InterruptedException;
    }

    /**
     * How many cases of one request (or items of one batch) wait for their turns at once: enough to fill a 2-core
     * host's sandboxes, few enough that one request never fills the admission's queue by itself.
     */
    public static final int PARALLEL = Math.max(4, 2 * Runtime.getRuntime().availableProcessors());

    private final Executor executor;

    public Judge(Executor executor) {
        this.executor = executor;
    }

    /** The executor the cases run on. */
    public Executor executor() {
        return executor;
    }

    /** One test case: any of test code (appended to the program), stdin, expected stdout. */
    public record TestCase(
            @JsonProperty("code") String code,
            @JsonProperty("stdin") String stdin,
            @JsonProperty("expect") String expect) {}

    /** The body of {@code POST /v1/evaluate}; {@code image} is an image of the store to run in, or null. */
    public record Request(
            @JsonProperty("language") String language,
            @JsonProperty("code") String code,
            @JsonProperty("testcases") List<TestCase> testcases,
            @JsonProperty("compare") Comparison.Spec compare,
            @JsonProperty("run_all_cases") Boolean runAllCases,
            @JsonProperty("limits") LimitsSpec limits,
            @JsonProperty("files") List<FileInput> files,
            @JsonProperty("image") String image) {

        /** A request on the runtime's own file system. */
        public Request(String language, String code, List<TestCase> testcases, Comparison.Spec compare,
                Boolean runAllCases, LimitsSpec limits, List<FileInput> files) {
            this(language, code, testcases, compare, runAllCases, limits, files, null);
        }
    }

    /** One case's verdict: {@code status} is the run's verdict, or {@code skipped} after an earlier failure. */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record CaseResult(
            @JsonProperty("passed") boolean passed,
            @JsonProperty("status") CaseStatus status,
            @JsonProperty("score") double score,
            @JsonProperty("reason") String reason,
            @JsonProperty("stdout") String stdout,
            @JsonProperty("stderr") String stderr,
            @JsonProperty("exit_code") Integer exitCode,
            @JsonProperty("wall_ms") long wallMs) {

        static CaseResult skipped() {
            return new CaseResult(false, CaseStatus.SKIPPED, 0, "an earlier case failed", null, null, null, 0);
        }
    }

    /** The answer: a result per case, how many passed, and the mean score (partial credit counts). */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record Result(
            @JsonProperty("results") List<CaseResult> results,
            @JsonProperty("passed") int passed,
            @JsonProperty("total") int total,
            @JsonProperty("score") double score,
            @JsonProperty("compile") ExecuteResult compile,
            @JsonProperty("image_digest") String imageDigest) {}

    /**
     * @throws RequestException for an unknown language, no test cases, too many, a bad comparison or limits
     */
    public Result evaluate(Request request) throws InterruptedException {
        return evaluate(request, Gate.OPEN);
    }

    /**
     * As {@link #evaluate(Request)}, each case's run within a turn of {@code gate}'s.
     *
     * @throws RequestException also when the gate refuses a turn (429/503 with a Retry-After): no verdict is made up
     */
    public Result evaluate(Request request, Gate gate) throws InterruptedException {
        LanguageRuntime runtime = executor.runtimeFor(new ExecuteRequest(request.language(), null, null, null, null,
                request.limits(), request.image())); // an image being pulled is waited for at most timeout_ms
        if (request.code() == null) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "code is required");
        }
        List<TestCase> cases = request.testcases() == null ? List.of() : request.testcases();
        if (cases.isEmpty() || cases.size() > MAX_CASES) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "testcases must hold 1 to " + MAX_CASES + " cases");
        }
        if (cases.stream().anyMatch(c -> c == null)) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, "a test case is null");
        }
        Comparison comparison = Comparison.of(request.compare());
        ExecuteRequest base = new ExecuteRequest(request.language(), request.code(), null, null, request.files(),
                request.limits(), request.image());
        Limits limits = Executor.limitsFor(runtime, base);
        boolean all = Boolean.TRUE.equals(request.runAllCases());
        boolean shared = runtime.compiled() && cases.stream().allMatch(c -> c.code() == null || c.code().isEmpty());
        ExecuteResult compile = null;
        List<CaseResult> results;
        if (shared) {
            try (Program program = executor.prepare(runtime, request.code(), request.files())) {
                compile = program.compileResult();
                if (!program.runnable()) {
                    List<CaseResult> failed = new ArrayList<>();
                    CaseStatus status = compile.status() == Verdict.SANDBOX_ERROR ? CaseStatus.SANDBOX_ERROR
                            : CaseStatus.COMPILE_ERROR;
                    for (int i = 0; i < cases.size(); i++) {
                        failed.add(new CaseResult(false, status, 0, "the program did not compile", "",
                                compile.stderr(), null, 0));
                    }
                    return summarise(failed, compile, runtime.imageDigest());
                }
                results = run(cases, all, gate.parallel(), c -> gate.through(limits.timeoutMs(),
                        () -> judge(program.run(c.stdin(), List.of(), limits), c, comparison)));
            }
        } else {
            // test code is sealed up front, so that a case that cannot be sealed fails the request before any run
            Map<TestCase, Sealed> sealed = new IdentityHashMap<>();
            for (TestCase c : cases) {
                sealed.put(c, Sealed.of(runtime.language(), request.code(), c.code()));
            }
            results = run(cases, all, gate.parallel(), c -> {
                Sealed s = sealed.get(c);
                ExecuteResult r = gate.through(limits.timeoutMs(), () -> executor.execute(new ExecuteRequest(
                        request.language(), s.program(), c.stdin(), null, request.files(), request.limits(),
                        request.image())));
                return judge(s.proof() == null ? new TestProof.Judged(r, r.ok(), null) : s.proof().judged(r), c,
                        comparison);
            });
        }
        return summarise(results, compile, runtime.imageDigest());
    }

    @FunctionalInterface
    private interface OneCase {
        CaseResult run(TestCase c) throws InterruptedException;
    }

    /** In order, stopping at the first failure; or {@code parallel} cases at once (each waits for its own turn). */
    private static List<CaseResult> run(List<TestCase> cases, boolean all, int parallel, OneCase one)
            throws InterruptedException {
        List<CaseResult> results = new ArrayList<>();
        if (!all) {
            boolean failed = false;
            for (TestCase c : cases) {
                CaseResult r = failed ? CaseResult.skipped() : one.run(c);
                failed |= !r.passed();
                results.add(r);
            }
            return results;
        }
        try (ExecutorService threads = Executors.newFixedThreadPool(Math.min(parallel, cases.size()),
                Thread.ofVirtual().factory())) {
            List<Future<CaseResult>> futures = new ArrayList<>();
            for (TestCase c : cases) {
                futures.add(threads.submit((Callable<CaseResult>) () -> one.run(c)));
            }
            for (Future<CaseResult> f : futures) {
                try {
                    results.add(f.get());
                } catch (ExecutionException e) {
                    if (e.getCause() instanceof RuntimeException re) {
                        throw re;
                    }
                    throw new IllegalStateException(e.getCause());
                }
            }
        }
        return results;
    }

    /** A case's program: the code alone, or the code, its test code and the proof that the tests ran to the end. */
    private record Sealed(String program, TestProof proof) {
        static Sealed of(String language, String code, String tests) {
            if (tests == null || tests.isEmpty()) {
                return new Sealed(code, null);
            }
            TestProof proof = TestProof.fresh();
            return new Sealed(proof.seal(language, code + "\n" + tests), proof);
        }
    }

    static CaseResult judge(TestProof.Judged j, TestCase c, Comparison comparison) {
        ExecuteResult r = j.result();
        if (r.ok() && !j.passed()) {
            return new CaseResult(false, CaseStatus.of(r.status()), 0, j.reason(), r.stdout(), r.stderr(), r.exitCode(),
                    r.wallMs());
        }
        return judge(r, c, comparison);
    }

    static CaseResult judge(ExecuteResult r, TestCase c, Comparison comparison) {
        CaseStatus status = CaseStatus.of(r.status());
        if (!r.ok()) {
            return new CaseResult(false, status, 0, r.message() != null ? r.message() : "the program's verdict is "
                    + r.status().wireName(), r.stdout(), r.stderr(), r.exitCode(), r.wallMs());
        }
        if (c.expect() == null) {
            return new CaseResult(true, status, 1, "ran without error", r.stdout(), r.stderr(), r.exitCode(),
                    r.wallMs());
        }
        Comparison.Match m = comparison.compare(c.expect(), r.stdout());
        return new CaseResult(m.passed(), status, m.score(), m.reason(), r.stdout(), r.stderr(), r.exitCode(),
                r.wallMs());
    }

    private static Result summarise(List<CaseResult> results, ExecuteResult compile, String imageDigest) {
        int passed = (int) results.stream().filter(CaseResult::passed).count();
        double score = results.stream().mapToDouble(CaseResult::score).sum() / results.size();
        return new Result(results, passed, results.size(), score, compile, imageDigest);
    }
}
