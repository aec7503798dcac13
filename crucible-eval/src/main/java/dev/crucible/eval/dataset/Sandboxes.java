package dev.crucible.eval.dataset;

import dev.crucible.eval.Judge;
import dev.crucible.exec.ExecuteRequest;
import dev.crucible.exec.ExecuteResult;

/**
 * Where a dataset run's programs are judged: this host's engine ({@link #local}) or a remote Crucible
 * ({@link RemoteCrucible}). Both take the same requests and give the same answers, so a sample's verdict does not
 * depend on where it ran. Implementations are thread-safe.
 */
public interface Sandboxes {
    /** One run, as {@code POST /v1/execute}. */
    ExecuteResult execute(ExecuteRequest request) throws InterruptedException, NoVerdict;

    /** A program against test cases, as {@code POST /v1/evaluate}. */
    Judge.Result evaluate(Judge.Request request) throws InterruptedException, NoVerdict;

    /** How many samples to keep in flight now; asked again as the run goes, so it may change. At least 1. */
    int concurrency();

    /**
     * No verdict could be had for a request: the infrastructure failed (a replica died, a balancer had no server, the
     * retries ran out), not the program. The sample is left out of the results, to be run again on resume. {@code
     * fatal} when no later request can succeed either (the token was refused): the run stops.
     */
    final class NoVerdict extends Exception {
        private final boolean fatal;

        public NoVerdict(String message, boolean fatal) {
            super(message);
            this.fatal = fatal;
        }

        public boolean fatal() {
            return fatal;
        }
    }

    /** This host's engine: {@code concurrency} samples at once; never throws {@link NoVerdict}. */
    static Sandboxes local(Judge judge, int concurrency) {
        return new Sandboxes() {
            @Override
            public ExecuteResult execute(ExecuteRequest request) throws InterruptedException {
                return judge.executor().execute(request);
            }

            @Override
            public Judge.Result evaluate(Judge.Request request) throws InterruptedException {
                return judge.evaluate(request);
            }

            @Override
            public int concurrency() {
                return Math.max(1, concurrency);
            }
        };
    }
}
