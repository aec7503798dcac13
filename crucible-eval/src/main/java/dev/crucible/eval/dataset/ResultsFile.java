package dev.crucible.eval.dataset;

import dev.crucible.eval.dataset.DatasetRun.SampleId;
import dev.crucible.eval.dataset.DatasetRun.SampleResult;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import tools.jackson.databind.JsonNode;

/**
 * A results file: one JSON line per sample ({@link SampleResult}), keyed by {@code task_id} and {@code sample}, then
 * a summary line. Written by {@link DatasetRun} (once per sample) and {@link ResultsMerge}.
 */
final class ResultsFile {
    private ResultsFile() {}

    /** A sample line and where it stood. */
    record Line(SampleResult result, int number) {}

    /**
     * The samples already in the results file, for a resumed run. Summary lines and a line cut by a kill are dropped
     * (the file is rewritten without them, atomically), so that the file stays one line per sample.
     */
    static Map<SampleId, SampleResult> readForResume(Path out) throws IOException {
        Map<SampleId, SampleResult> done = new LinkedHashMap<>();
        if (!Files.exists(out)) {
            return done;
        }
        List<String> keep = new ArrayList<>();
        boolean dropped = false;
        for (String line : Files.readAllLines(out, StandardCharsets.UTF_8)) {
            SampleResult r = sampleOrNull(line);
            if (r != null) {
                done.put(SampleId.of(r), r);
                keep.add(line);
            } else {
                dropped = true;
            }
        }
        if (dropped) {
            Path temp = out.resolveSibling(out.getFileName() + ".tmp");
            Files.write(temp, keep, StandardCharsets.UTF_8);
            Files.move(temp, out, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        }
        return done;
    }

    /**
     * Every sample line of {@code in}, in order, for a merge: nothing is rewritten. Summary lines are skipped; a last
     * line without its newline (cut by a kill) is skipped; any other line that is not a sample is refused.
     *
     * @throws ResultsMerge.Refused naming the file and line
     */
    static List<Line> readAll(Path in) throws IOException, ResultsMerge.Refused {
        String text = Files.readString(in, StandardCharsets.UTF_8);
        List<String> lines = text.lines().toList();
        List<Line> out = new ArrayList<>();
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i);
            if (line.isBlank()) {
                continue;
            }
            SampleResult r = sampleOrNull(line);
            if (r != null) {
                out.add(new Line(r, i + 1));
            } else if (!isSummary(line) && !(i == lines.size() - 1 && !text.endsWith("\n"))) {
                throw new ResultsMerge.Refused(in + ":" + (i + 1) + ": not a result line of crucible eval dataset");
            }
        }
        return out;
    }

    private static SampleResult sampleOrNull(String line) {
        try {
            JsonNode n = Dataset.JSON.readTree(line);
            if (n.has("task_id") && n.has("sample") && n.has("passed")) {
                return Dataset.JSON.treeToValue(n, SampleResult.class);
            }
        } catch (RuntimeException e) {
            // a cut line
        }
        return null;
    }

    private static boolean isSummary(String line) {
        try {
            return Dataset.JSON.readTree(line).has("summary");
        } catch (RuntimeException e) {
            return false;
        }
    }

    /**
     * Each problem's {n, c} over {@code ids} (in their order), with {@code results}: a sample without a result counts
     * in n and not in c.
     */
    static Collection<int[]> perProblem(List<SampleId> ids, Map<SampleId, SampleResult> results) {
        Map<String, int[]> perProblem = new LinkedHashMap<>();
        for (SampleId id : ids) {
            SampleResult r = results.get(id);
            int[] nc = perProblem.computeIfAbsent(id.taskId(), k -> new int[2]);
            nc[0]++;
            nc[1] += r != null && r.passed() ? 1 : 0;
        }
        return perProblem.values();
    }
}
