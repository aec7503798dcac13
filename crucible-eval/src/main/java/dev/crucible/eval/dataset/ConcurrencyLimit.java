package dev.crucible.eval.dataset;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.IntSupplier;

/**
 * Permits whose number may change while they are held: a remote endpoint's capacity is read again as a run goes. A
 * smaller limit takes effect as permits come back; a larger one at once. Thread-safe.
 */
final class ConcurrencyLimit {
    private final IntSupplier limit;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition freed = lock.newCondition();
    private int inUse;

    ConcurrencyLimit(IntSupplier limit) {
        this.limit = limit;
    }

    /** Waits for a permit; the limit is asked again at least every second while waiting. */
    void acquire() throws InterruptedException {
        lock.lock();
        try {
            while (inUse >= Math.max(1, limit.getAsInt())) {
                freed.await(1, TimeUnit.SECONDS);
            }
            inUse++;
        } finally {
            lock.unlock();
        }
    }

    void release() {
        lock.lock();
        try {
            inUse--;
            freed.signalAll();
        } finally {
            lock.unlock();
        }
    }
}
