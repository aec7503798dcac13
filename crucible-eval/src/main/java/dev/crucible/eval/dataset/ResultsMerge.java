package dev.crucible.eval.dataset;

import com.fasterxml.jackson.annotation.JsonProperty;
import dev.crucible.eval.dataset.DatasetRun.SampleId;
import dev.crucible.eval.dataset.DatasetRun.SampleResult;
import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * {@code crucible eval merge}: the results files of a run's shards as one, with the pass@k a single run gives (the
 * same {@link PassAtK} over the same samples, summed in its canonical order). Refuses a sample twice in one file, the
 * same sample with different verdicts in two files (the same verdict twice — a shard run again — is kept once), and,
 * when the dataset is given, a sample it does not have or one of its samples missing.
 */
public final class ResultsMerge {
    private ResultsMerge() {}

    /** Why the inputs cannot be merged; nothing was written. */
    public static final class Refused extends Exception {
        public Refused(String message) {
            super(message);
        }
    }

    /** The merged file's summary line; {@code overlaps} counts samples found (with the same verdict) in two inputs. */
    public record Summary(
            @JsonProperty("problems") int problems,
            @JsonProperty("samples") int samples,
            @JsonProperty("passed") int passed,
            @JsonProperty("inputs") int inputs,
            @JsonProperty("overlaps") int overlaps,
            @JsonProperty("pass_at_k") Map<String, Double> passAtK) {}

    /**
     * Writes {@code out} (atomically: nothing on refusal): the sample lines in the dataset's order when {@code
     * expected} is given, else in the order the inputs hold them, then the summary line.
     *
     * @param expected every sample of the run ({@link DatasetRun#sampleIds}), or null to take the inputs as complete
     * @throws Refused for a duplicate, a disagreement, an unknown or a missing sample, or a line that is not a result
     */
    public static Summary merge(List<Path> inputs, Path out, List<SampleId> expected, List<Integer> ks)
            throws IOException, Refused {
        Map<SampleId, SampleResult> merged = new LinkedHashMap<>();
        Map<SampleId, String> from = new HashMap<>();
        int overlaps = 0;
        for (Path in : inputs) {
            Map<SampleId, Integer> inThisFile = new HashMap<>();
            for (ResultsFile.Line line : ResultsFile.readAll(in)) {
                SampleResult r = line.result();
                SampleId id = SampleId.of(r);
                Integer before = inThisFile.putIfAbsent(id, line.number());
                if (before != null) {
                    throw new Refused(id + " is twice in " + in + " (lines " + before + " and " + line.number() + ")");
                }
                SampleResult other = merged.get(id);
                if (other == null) {
                    merged.put(id, r);
                    from.put(id, in + ":" + line.number());
                } else if (sameVerdict(other, r)) {
                    overlaps++;
                } else {
                    throw new Refused(id + " has two verdicts: " + verdict(other) + " at " + from.get(id) + ", "
                            + verdict(r) + " at " + in + ":" + line.number());
                }
            }
        }
        List<SampleId> ids = expected != null ? expected : List.copyOf(merged.keySet());
        if (expected != null) {
            Set<SampleId> known = new HashSet<>(expected);
            for (SampleId id : merged.keySet()) {
                if (!known.contains(id)) {
                    throw new Refused(id + " (" + from.get(id) + ") is not a sample of the dataset given");
                }
            }
            List<SampleId> missing = expected.stream().filter(id -> !merged.containsKey(id)).toList();
            if (!missing.isEmpty()) {
                throw new Refused(missing.size() + " of the dataset's " + expected.size() + " samples are in no input"
                        + " (first: " + missing.getFirst() + "); run the shard that holds them again with the same --out");
            }
        }
        var perProblem = ResultsFile.perProblem(ids, merged);
        int passed = (int) ids.stream().map(merged::get).filter(SampleResult::passed).count();
        Summary summary = new Summary(perProblem.size(), ids.size(), passed, inputs.size(), overlaps,
                PassAtK.named(perProblem, ks));
        Path temp = out.resolveSibling(out.getFileName() + ".merging");
        try (BufferedWriter w = Files.newBufferedWriter(temp, StandardCharsets.UTF_8)) {
            for (SampleId id : ids) {
                w.write(Dataset.JSON.writeValueAsString(merged.get(id)));
                w.write('\n');
            }
            w.write(Dataset.JSON.writeValueAsString(Map.of("summary", summary)));
            w.write('\n');
        }
        Files.move(temp, out, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        return summary;
    }

    /** The verdict, not the timing: the same sample judged twice takes a different wall time. */
    private static boolean sameVerdict(SampleResult a, SampleResult b) {
        return a.passed() == b.passed() && a.status() == b.status() && Objects.equals(a.result(), b.result());
    }

    private static String verdict(SampleResult r) {
        String result = r.result() == null ? "" : r.result().length() > 80 ? r.result().substring(0, 80) + "…" : r.result();
        String status = r.status() == null ? null : r.status().wireName();
        return (r.passed() ? "passed" : "failed") + " (" + status + ": " + result + ")";
    }
}
