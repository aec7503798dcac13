package dev.crucible.health;

import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The stuck or dead parts the server replaced by itself: a zygote that stopped answering, a warm-pool agent that did
 * not take its program, a session interpreter that did not answer. Each replacement is logged once, with its reason,
 * and counted by part and reason ({@code crucible_part_replacements_total}). Thread-safe.
 */
public final class Replacements {
    private static final System.Logger LOG = System.getLogger("crucible.health");

    /** What was replaced: the metric's {@code part} label. */
    public enum Part {
        ZYGOTE, POOL_AGENT, INTERPRETER;

        public String label() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    /** Why: the metric's {@code reason} label. */
    public enum Reason {
        /** It did not answer a request (a fork, a kill, a program, a cell) within its bound. */
        UNANSWERED,
        /** It ended by itself (killed from outside, crashed). */
        DIED;

        public String label() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    private final Map<String, AtomicLong> counts = new ConcurrentHashMap<>();

    /** Logs one replacement of {@code part} ({@code which}: e.g. "the python zygote") and counts it. */
    public void replaced(Part part, Reason reason, String which, String detail) {
        counts.computeIfAbsent(part.label() + "\0" + reason.label(), k -> new AtomicLong()).incrementAndGet();
        LOG.log(System.Logger.Level.WARNING, "replacing " + which + " (" + reason.label() + "): " + detail);
    }

    /** How many replacements so far, by {@code part} then {@code reason} label; sorted. */
    public Map<String, Map<String, Long>> counts() {
        Map<String, Map<String, Long>> out = new TreeMap<>();
        counts.forEach((key, n) -> {
            String[] pr = key.split("\0", 2);
            out.computeIfAbsent(pr[0], k -> new TreeMap<>()).put(pr[1], n.get());
        });
        return out;
    }

    /** How many times {@code part} was replaced, for any reason. */
    public long count(Part part) {
        return counts().getOrDefault(part.label(), Map.of()).values().stream().mapToLong(Long::longValue).sum();
    }
}
