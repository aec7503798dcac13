package dev.crucible.image.registry;

import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * A response body whose every read must return within a time limit: the JDK's HttpClient bounds only the wait for
 * the headers, so a registry that stalls mid-body would hang a pull forever. Past the limit the body is closed under
 * the reader, whose read then throws {@link HttpTimeoutException}. One reader at a time.
 */
final class ReadTimeout extends FilterInputStream {
    private static final ScheduledThreadPoolExecutor TIMER = timer();

    private final long nanos;
    private volatile boolean expired;

    ReadTimeout(InputStream body, Duration timeout) {
        super(body);
        this.nanos = timeout.toNanos();
    }

    private static ScheduledThreadPoolExecutor timer() {
        ScheduledThreadPoolExecutor timer = new ScheduledThreadPoolExecutor(1,
                Thread.ofPlatform().daemon().name("crucible-pull-timeout").factory());
        timer.setRemoveOnCancelPolicy(true);
        return timer;
    }

    @Override
    public int read() throws IOException {
        byte[] one = new byte[1];
        int n = read(one, 0, 1);
        return n < 0 ? -1 : one[0] & 0xff;
    }

    @Override
    public int read(byte[] bytes, int from, int length) throws IOException {
        ScheduledFuture<?> alarm = TIMER.schedule(this::expire, nanos, TimeUnit.NANOSECONDS);
        try {
            return super.read(bytes, from, length);
        } catch (IOException e) {
            if (expired) {
                throw new HttpTimeoutException("no data for " + seconds(nanos) + " s");
            }
            throw e;
        } finally {
            alarm.cancel(false);
        }
    }

    @Override
    public long skip(long n) throws IOException {
        int chunk = (int) Math.min(Math.max(n, 0), 8192);
        return chunk == 0 ? 0 : Math.max(0, read(new byte[chunk], 0, chunk));
    }

    static String seconds(long nanos) {
        return nanos % 1_000_000_000L == 0 ? Long.toString(nanos / 1_000_000_000L)
                : String.format(Locale.ROOT, "%.1f", nanos / 1e9);
    }

    private void expire() {
        expired = true;
        try {
            in.close();
        } catch (IOException ignored) {
            // the reader sees the stream closed, which is all we want
        }
    }
}
