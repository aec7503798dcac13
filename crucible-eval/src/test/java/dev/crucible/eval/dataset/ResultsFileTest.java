package dev.crucible.eval.dataset;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.eval.CaseStatus;
import dev.crucible.eval.dataset.DatasetRun.SampleId;
import dev.crucible.eval.dataset.DatasetRun.SampleResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Results files written before statuses were typed load, for a resume and for a merge, and come out unchanged. */
class ResultsFileTest {
    /** Lines as earlier versions wrote them, one per status a sample was given. */
    static final List<String> OLD = List.of(
            "{\"task_id\":\"t/0\",\"sample\":0,\"passed\":true,\"status\":\"ok\",\"result\":\"passed\",\"wall_ms\":31}",
            "{\"task_id\":\"t/0\",\"sample\":1,\"passed\":false,\"status\":\"runtime_error\","
                    + "\"result\":\"failed: AssertionError\",\"wall_ms\":40}",
            "{\"task_id\":\"t/1\",\"sample\":0,\"passed\":false,\"status\":\"timeout\",\"result\":\"timed out\","
                    + "\"wall_ms\":3001}",
            "{\"task_id\":\"t/1\",\"sample\":1,\"passed\":false,\"status\":\"invalid\","
                    + "\"result\":\"failed: unknown language 'cobol'\",\"wall_ms\":0}",
            "{\"task_id\":\"t/2\",\"sample\":0,\"passed\":false,\"status\":\"sandbox_error\","
                    + "\"result\":\"failed: sandbox_error: the zygote was replaced\",\"wall_ms\":5}",
            "{\"task_id\":\"t/2\",\"sample\":1,\"passed\":false,\"status\":\"ok\",\"result\":\"failed: test 2: "
                    + "expected 3, got 4\",\"wall_ms\":9}");

    @Test
    void anOldResultsFileResumesUnchanged(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("old.jsonl");
        String text = String.join("\n", OLD) + "\n";
        Files.writeString(file, text);
        Map<SampleId, SampleResult> done = ResultsFile.readForResume(file);
        assertThat(done.values()).extracting(SampleResult::status).containsExactly(CaseStatus.OK,
                CaseStatus.RUNTIME_ERROR, CaseStatus.TIMEOUT, CaseStatus.INVALID, CaseStatus.SANDBOX_ERROR,
                CaseStatus.OK);
        assertThat(Files.readString(file)).isEqualTo(text); // nothing dropped, nothing rewritten
        assertThat(done.values().stream().map(Dataset.JSON::writeValueAsString)).containsExactlyElementsOf(OLD);
    }

    @Test
    void anOldResultsFileMergesToTheSameLines(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("old.jsonl");
        Files.writeString(file, String.join("\n", OLD) + "\n{\"summary\":{}}\n");
        Path out = dir.resolve("merged.jsonl");
        ResultsMerge.Summary s = ResultsMerge.merge(List.of(file), out, null, List.of(1));
        assertThat(s.samples()).isEqualTo(OLD.size());
        assertThat(Files.readAllLines(out).subList(0, OLD.size())).containsExactlyElementsOf(OLD);
    }
}
