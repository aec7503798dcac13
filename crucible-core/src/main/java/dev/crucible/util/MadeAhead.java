package dev.crucible.util;

import dev.crucible.os.Processes;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Predicate;

/**
 * Things made ahead of being asked for, up to a target, by one background thread: what {@link #take} hands out is
 * made again behind it. A maker that cannot make one now (a cap reached) returns null, and one that fails is logged;
 * either way making stops until the next {@link #fill}, so a host that cannot make them costs one try per take, in the
 * background. The making thread runs at a lower priority (nice {@value #BACKGROUND_NICE}, as do the processes it starts):
 * on a busy host, requests go first. What is made but never taken is handed to the discarder: by {@link #discardOne} and at {@link #close}.
 * Thread-safe.
 *
 * @param <T> what is made
 */
public final class MadeAhead<T> implements AutoCloseable {
    /** Makes one; null when it cannot now. */
    @FunctionalInterface
    public interface Maker<T> {
        T make() throws Exception;
    }

    private static final System.Logger LOG = System.getLogger("crucible.ahead");
    /** The making thread's nice value: what is made ahead yields the cores to what was asked for now. */
    static final int BACKGROUND_NICE = 10;

    private final String what;
    private final List<Maker<T>> makers;
    private final Consumer<T> discarder;
    private final List<T> slots; // one per maker: what it made and is ready, or null
    private final ExecutorService thread;
    private boolean making;
    private boolean closed;
    private boolean failedBefore;

    /** Keeps {@code target} of {@code what} (named in logs and the thread) made by {@code maker}; none until filled. */
    public MadeAhead(String what, int target, Maker<T> maker, Consumer<T> discarder) {
        this(what, Collections.nCopies(target, maker), discarder);
    }

    /**
     * Keeps one made by each of {@code makers} (several kinds, each made by its own; a maker listed twice keeps two), in
     * the order listed; none until filled.
     */
    public MadeAhead(String what, List<Maker<T>> makers, Consumer<T> discarder) {
        this.what = what;
        this.makers = List.copyOf(makers);
        this.discarder = discarder;
        this.slots = new ArrayList<>(Collections.nCopies(makers.size(), null));
        ThreadFactory platform = Thread.ofPlatform().daemon().name("crucible-ahead-" + what).factory();
        this.thread = Executors.newSingleThreadExecutor(run -> platform.newThread(() -> {
            Processes.lowerThisThreadsPriority(BACKGROUND_NICE);
            run.run();
        }));
    }

    /** Starts making up to the target in the background, unless that is under way or there are enough. */
    public synchronized void fill() {
        if (closed || making || !slots.contains(null)) {
            return;
        }
        making = true;
        thread.execute(this::makeUpToTarget);
    }

    /** Makes what each empty slot lacks, one at a time; a maker that gave nothing or failed is not asked again this round. */
    private void makeUpToTarget() {
        Set<Maker<T>> refused = Collections.newSetFromMap(new IdentityHashMap<>());
        try {
            while (true) {
                int slot = -1;
                synchronized (this) {
                    for (int i = 0; i < slots.size() && !closed; i++) {
                        if (slots.get(i) == null && !refused.contains(makers.get(i))) {
                            slot = i;
                            break;
                        }
                    }
                }
                if (slot < 0) {
                    return;
                }
                T made;
                try {
                    made = makers.get(slot).make();
                } catch (Exception e) {
                    LOG.log(failedBefore ? System.Logger.Level.DEBUG : System.Logger.Level.WARNING, "cannot make "
                            + what + " ahead: " + e.getMessage() + " (made when asked instead)");
                    failedBefore = true;
                    refused.add(makers.get(slot));
                    continue;
                }
                if (made == null) {
                    refused.add(makers.get(slot));
                    continue;
                }
                synchronized (this) {
                    if (!closed) {
                        slots.set(slot, made);
                        continue;
                    }
                }
                discarder.accept(made); // closed while it was made
                return;
            }
        } finally {
            synchronized (this) {
                making = false;
            }
        }
    }

    /** One made ahead that {@code fits} (the first in the makers' order), or null; making another starts behind it. */
    public T take(Predicate<T> fits) {
        T taken = null;
        synchronized (this) {
            for (int i = 0; i < slots.size(); i++) {
                T t = slots.get(i);
                if (t != null && fits.test(t)) {
                    slots.set(i, null);
                    taken = t;
                    break;
                }
            }
        }
        fill();
        return taken;
    }

    /** Discards every one made ahead that {@code spoiled} (gone bad while it waited); making others starts behind. */
    public void discardIf(Predicate<T> spoiled) {
        List<T> bad = new ArrayList<>();
        synchronized (this) {
            for (int i = 0; i < slots.size(); i++) {
                T t = slots.get(i);
                if (t != null && spoiled.test(t)) {
                    slots.set(i, null);
                    bad.add(t);
                }
            }
        }
        bad.forEach(discarder);
        if (!bad.isEmpty()) {
            fill();
        }
    }

    /** Discards one made ahead (what it holds is wanted for something asked for now); whether there was one. */
    public boolean discardOne() {
        T t = null;
        synchronized (this) {
            for (int i = 0; i < slots.size() && t == null; i++) {
                t = slots.set(i, null);
            }
        }
        if (t != null) {
            discarder.accept(t);
        }
        return t != null;
    }

    /** How many are made and waiting. */
    public synchronized int ready() {
        return (int) slots.stream().filter(Objects::nonNull).count();
    }

    /** Stops making (one being made is finished, then discarded) and discards every one made. */
    @Override
    public void close() {
        synchronized (this) {
            closed = true;
        }
        thread.shutdown();
        try {
            if (!thread.awaitTermination(30, TimeUnit.SECONDS)) {
                LOG.log(System.Logger.Level.WARNING, "making " + what + " ahead did not end in 30 s");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        while (discardOne()) {
            // each discarded in turn
        }
    }
}
