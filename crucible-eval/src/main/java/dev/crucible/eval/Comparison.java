package dev.crucible.eval;

import com.fasterxml.jackson.annotation.JsonProperty;
import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * How an actual output is compared with the expected one: one interface, six ways.
 *
 * <ul>
 *   <li>{@code exact}: byte for byte (after CRLF → LF).
 *   <li>{@code lines} (the default): trailing whitespace of each line and trailing blank lines ignored.
 *   <li>{@code whitespace}: the same sequence of whitespace-separated tokens.
 *   <li>{@code case_insensitive}: as {@code lines}, ignoring case.
 *   <li>{@code numeric}: token by token; tokens that are both numbers match within {@code abs_tol} or
 *       {@code rel_tol} × |expected|, others exactly.
 *   <li>{@code partial}: partial credit in [0, 1] with reward-kit's semantics, minus its bug (lines are kept, so the
 *       multi-line rule applies).
 * </ul>
 */
public sealed interface Comparison {

    /** A score in [0, 1] (1 = a match) and why. */
    record Match(double score, String reason) {
        public boolean passed() {
            return score >= 1.0;
        }
    }

    Match compare(String expected, String actual);

    /** The wire form: {@code {mode, abs_tol?, rel_tol?}}. */
    record Spec(
            @JsonProperty("mode") String mode,
            @JsonProperty("abs_tol") Double absTol,
            @JsonProperty("rel_tol") Double relTol) {}

    List<String> MODES = List.of("exact", "lines", "whitespace", "case_insensitive", "numeric", "partial");

    /**
     * The comparison a spec names; null means the default ({@code lines}).
     *
     * @throws RequestException ({@code invalid_request}) for an unknown mode or a negative tolerance
     */
    static Comparison of(Spec spec) {
        String mode = spec == null || spec.mode() == null ? "lines" : spec.mode();
        return switch (mode) {
            case "exact" -> new Exact();
            case "lines" -> new Lines();
            case "whitespace" -> new Whitespace();
            case "case_insensitive" -> new CaseInsensitive();
            case "numeric" -> {
                double abs = spec.absTol() == null ? 1e-9 : spec.absTol();
                double rel = spec.relTol() == null ? 1e-9 : spec.relTol();
                if (!(abs >= 0) || !(rel >= 0)) {
                    throw new RequestException(ErrorCode.INVALID_REQUEST, "abs_tol and rel_tol must be >= 0");
                }
                yield new Numeric(abs, rel);
            }
            case "partial" -> new Partial();
            default -> throw new RequestException(ErrorCode.INVALID_REQUEST, "compare mode must be one of " + MODES
                    + ", got '" + mode + "'");
        };
    }

    /** CRLF and CR to LF. */
    static String unix(String s) {
        return s == null ? "" : s.replace("\r\n", "\n").replace('\r', '\n');
    }

    /** Trailing whitespace of each line and trailing blank lines removed. */
    static String lines(String s) {
        String[] lines = unix(s).split("\n", -1);
        StringBuilder out = new StringBuilder();
        int last = lines.length - 1;
        while (last >= 0 && lines[last].isBlank()) {
            last--;
        }
        for (int i = 0; i <= last; i++) {
            out.append(lines[i].stripTrailing());
            if (i < last) {
                out.append('\n');
            }
        }
        return out.toString();
    }

    static List<String> tokens(String s) {
        String t = unix(s).strip();
        return t.isEmpty() ? List.of() : Arrays.asList(t.split("\\s+"));
    }

    private static Match verdict(boolean equal, String what) {
        return equal ? new Match(1.0, "match") : new Match(0.0, what + " differ");
    }

    record Exact() implements Comparison {
        @Override
        public Match compare(String expected, String actual) {
            return verdict(unix(expected).equals(unix(actual)), "outputs");
        }
    }

    record Lines() implements Comparison {
        @Override
        public Match compare(String expected, String actual) {
            return verdict(lines(expected).equals(lines(actual)), "outputs (trailing whitespace ignored)");
        }
    }

    record Whitespace() implements Comparison {
        @Override
        public Match compare(String expected, String actual) {
            return verdict(tokens(expected).equals(tokens(actual)), "tokens");
        }
    }

    record CaseInsensitive() implements Comparison {
        @Override
        public Match compare(String expected, String actual) {
            return verdict(lines(expected).toLowerCase(Locale.ROOT).equals(lines(actual).toLowerCase(Locale.ROOT)),
                    "outputs (case ignored)");
        }
    }

    record Numeric(double absTol, double relTol) implements Comparison {
        @Override
        public Match compare(String expected, String actual) {
            List<String> e = tokens(expected);
            List<String> a = tokens(actual);
            if (e.size() != a.size()) {
                return new Match(0.0, "expected " + e.size() + " tokens, got " + a.size());
            }
            for (int i = 0; i < e.size(); i++) {
                Double x = number(e.get(i));
                Double y = number(a.get(i));
                boolean same = x != null && y != null
                        ? Math.abs(x - y) <= Math.max(absTol, relTol * Math.abs(x)) || x.equals(y)
                        : e.get(i).equals(a.get(i));
                if (!same) {
                    return new Match(0.0, "token " + (i + 1) + " differs: expected " + e.get(i) + ", got " + a.get(i));
                }
            }
            return new Match(1.0, "match within tolerance");
        }
    }

    static Double number(String token) {
        if (token.isEmpty() || !(Character.isDigit(token.charAt(token.length() - 1)) || token.endsWith("."))
                && !token.equalsIgnoreCase("nan") && !token.equalsIgnoreCase("inf") && !token.equalsIgnoreCase("-inf")) {
            return null;
        }
        try {
            return switch (token.toLowerCase(Locale.ROOT)) {
                case "inf", "+inf" -> Double.POSITIVE_INFINITY;
                case "-inf" -> Double.NEGATIVE_INFINITY;
                case "nan" -> Double.NaN;
                default -> Double.parseDouble(token);
            };
        } catch (NumberFormatException e) {
            return null;
        }
    }

    /**
     * reward-kit's {@code compare_outputs}: exact → 1; both numbers → by relative difference (≤ 0.001 → 1, ≤ 0.01 →
     * 0.9, ≤ 0.1 → 0.7, else 1 − rel; an expected 0 only matches 0); both JSON lists → 0.3 × length similarity +
     * 0.7 × mean best item similarity; several lines → 0.3 × line-count similarity + 0.7 × mean per-line LCS ratio;
     * otherwise LCS / max length. Whitespace is collapsed within each line, never across lines.
     */
    record Partial() implements Comparison {
        private static final JsonMapper JSON = JsonMapper.builder().build();

        @Override
        public Match compare(String expected, String actual) {
            String e = normalise(expected);
            String a = normalise(actual);
            double score = similarity(e, a);
            return new Match(score, score >= 1.0 ? "match" : String.format(Locale.ROOT, "similarity %.3f", score));
        }

        static String normalise(String s) {
            List<String> out = new ArrayList<>();
            for (String line : unix(s).strip().split("\n", -1)) {
                out.add(line.strip().replaceAll("\\s+", " "));
            }
            return String.join("\n", out);
        }

        static double similarity(String e, String a) {
            if (e.equals(a)) {
                return 1.0;
            }
            Double x = number(e);
            Double y = number(a);
            if (x != null && y != null) {
                if (x == 0) {
                    return y == 0 ? 1.0 : 0.0;
                }
                double rel = Math.abs(x - y) / Math.abs(x);
                return rel <= 0.001 ? 1.0 : rel <= 0.01 ? 0.9 : rel <= 0.1 ? 0.7 : Math.max(0, 1 - Math.min(1, rel));
            }
            if (e.startsWith("[") && a.startsWith("[")) {
                try {
                    JsonNode le = JSON.readTree(e);
                    JsonNode la = JSON.readTree(a);
                    if (le.isArray() && la.isArray()) {
                        return lists(le, la);
                    }
                } catch (RuntimeException ignored) {
                    // not JSON: compared as text
                }
            }
            if (e.contains("\n") || a.contains("\n")) {
                String[] el = e.split("\n", -1);
                String[] al = a.split("\n", -1);
                int n = Math.max(el.length, al.length);
                double sum = 0;
                for (int i = 0; i < n; i++) {
                    sum += i < el.length && i < al.length ? lcsRatio(el[i], al[i]) : 0;
                }
                double count = (double) Math.min(el.length, al.length) / Math.max(el.length, al.length);
                return 0.3 * count + 0.7 * (sum / n);
            }
            return lcsRatio(e, a);
        }

        private static double lists(JsonNode e, JsonNode a) {
            if (e.isEmpty() && a.isEmpty()) {
                return 1.0;
            }
            if (e.isEmpty() || a.isEmpty()) {
                return 0.0;
            }
            double length = (double) Math.min(e.size(), a.size()) / Math.max(e.size(), a.size());
            double sum = 0;
            for (JsonNode item : e) {
                double best = 0;
                for (JsonNode other : a) {
                    best = Math.max(best, similarity(plain(item), plain(other)));
                }
                sum += best;
            }
            return 0.3 * length + 0.7 * (sum / e.size());
        }

        private static String plain(JsonNode node) {
            return node.isString() ? node.asString() : node.toString();
        }

        /** Longest common subsequence over the longer length (character-level; long texts compared by lines). */
        static double lcsRatio(String x, String y) {
            if (x.isEmpty() && y.isEmpty()) {
                return 1.0;
            }
            if ((long) x.length() * y.length() > 25_000_000L) {
                return x.equals(y) ? 1.0 : 0.0;
            }
            int[] prev = new int[y.length() + 1];
            int[] cur = new int[y.length() + 1];
            for (int i = 1; i <= x.length(); i++) {
                for (int j = 1; j <= y.length(); j++) {
                    cur[j] = x.charAt(i - 1) == y.charAt(j - 1) ? prev[j - 1] + 1 : Math.max(prev[j], cur[j - 1]);
                }
                int[] t = prev;
                prev = cur;
                cur = t;
            }
            return (double) prev[y.length()] / Math.max(x.length(), y.length());
        }
    }
}
