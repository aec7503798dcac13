package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.annotation.JsonProperty;
import dev.crucible.egress.EgressReport;
import dev.crucible.egress.NetworkRequest;
import dev.crucible.eval.Judge;
import dev.crucible.eval.reward.Reward;
import dev.crucible.exec.ExecuteRequest;
import dev.crucible.exec.ExecuteResult;
import dev.crucible.health.PartStatus;
import dev.crucible.server.desktop.DesktopAction;
import dev.crucible.server.desktop.Desktops;
import dev.crucible.server.evaluations.EvaluationInfo;
import dev.crucible.server.evaluations.EvaluationRequest;
import dev.crucible.server.http.ErrorBody;
import dev.crucible.server.http.RuntimeInfo;
import dev.crucible.session.process.CommandRequest;
import dev.crucible.session.process.CommandResult;
import dev.crucible.session.process.ProcessInfo;
import dev.crucible.session.process.Terminal;
import dev.crucible.session.snapshot.SnapshotInfo;
import dev.crucible.session.spec.CellResult;
import dev.crucible.session.spec.CommitResult;
import dev.crucible.session.spec.ForkResult;
import dev.crucible.session.spec.PauseResult;
import dev.crucible.session.spec.PortInfo;
import dev.crucible.session.spec.SessionInfo;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The server's records are the wire contract (issue 51 item 2), and {@code openapi.json}'s schemas are checked
 * against them both ways ({@link RecordSchemas}): a field added to a record and not to the document, or documented
 * and not in the record, or of another type, or required where the server may leave it out, fails here. The document
 * keeps what a record cannot say at run time (descriptions, bounds, defaults), so it is hand-written and checked
 * rather than generated. The SDKs are checked against the document in turn: TypeScript's types are generated from it
 * ({@code TypeScriptWireTest}), the Java and Python clients' fields are compared with it ({@code ClientWireTest}).
 */
class WireContractTest {
    /** One body: the record the server reads or writes, the schema (a component, or a pointer to an inline one). */
    record Body(Class<?> record, String schema) {}

    /** What the server reads: the request bodies of its own {@code /v1} routes. */
    static final List<Body> REQUESTS = List.of(
            new Body(ExecuteRequest.class, "ExecuteRequest"),
            new Body(inner("session.SessionRoutes$CreateBody"), "SessionCreate"),
            new Body(inner("session.SessionRoutes$ExecuteBody"), "Cell"),
            new Body(CommandRequest.class, "CommandRequest"),
            new Body(NetworkRequest.class, "Network"),
            new Body(Terminal.class, "Terminal"),
            new Body(Judge.Request.class, "EvaluateRequest"),
            new Body(Reward.Request.class, "RewardRequest"),
            new Body(EvaluationRequest.class, "EvaluationRequest"),
            new Body(inner("ports.PortRoutes$PreviewBody"), "PreviewRequest"),
            new Body(inner("session.SessionRoutes$ForkBody"), body("/v1/sessions/{id}/fork")),
            new Body(inner("session.SessionRoutes$SnapshotBody"), body("/v1/sessions/{id}/snapshots")),
            new Body(inner("session.SessionRoutes$CommitBody"), body("/v1/sessions/{id}/commit")),
            new Body(inner("session.ProcessRoutes$StdinBody"), body("/v1/sessions/{id}/processes/{pid}/stdin")),
            new Body(inner("session.ProcessRoutes$SignalBody"), body("/v1/sessions/{id}/processes/{pid}/signal")),
            new Body(Desktops.Spec.class, "DesktopStart"),
            new Body(DesktopAction.class, "DesktopAction"),
            new Body(DesktopAction.Batch.class, "DesktopActions"));

    /** What the server writes, built as records. */
    static final List<Body> ANSWERS = List.of(
            new Body(ExecuteResult.class, "ExecuteResult"),
            new Body(RuntimeInfo.class, "Runtime"),
            new Body(ErrorBody.class, "Error"),
            new Body(SessionInfo.class, "Session"),
            new Body(CellResult.class, "CellResult"),
            new Body(CommandResult.class, "CommandResult"),
            new Body(ProcessInfo.class, "ProcessInfo"),
            new Body(PortInfo.class, "PortInfo"),
            new Body(PauseResult.class, "PauseResult"),
            new Body(ForkResult.class, "ForkResult"),
            new Body(SnapshotInfo.class, "Snapshot"),
            new Body(CommitResult.class, "CommitResult"),
            new Body(EgressReport.class, "NetworkReport"),
            new Body(PartStatus.class, "PartStatus"),
            new Body(Judge.Result.class, "EvaluateResult"),
            new Body(Reward.Result.class, "RewardResult"),
            new Body(EvaluationInfo.class, "Evaluation"),
            new Body(inner("ports.PortRoutes$Preview"), "Preview"),
            new Body(Desktops.Info.class, "Desktop"),
            new Body(DesktopAction.Result.class, "DesktopActionResult"),
            new Body(DesktopAction.Results.class, "DesktopActionResults"));

    /** Component schemas no record stands behind: the server builds these answers field by field. */
    static final Set<String> BUILT_BY_HAND = Set.of(
            "StreamEvent", // StreamWriter's NDJSON lines
            "FileEntry", // SessionRoutes.listFiles
            "ProcessOutput"); // ProcessRoutes.output

    static JsonNode openapi() throws IOException {
        try (InputStream in = CrucibleServer.class.getResourceAsStream("openapi.json")) {
            return JsonMapper.builder().build().readTree(in);
        }
    }

    private static Class<?> inner(String name) {
        try {
            return Class.forName("dev.crucible.server." + name);
        } catch (ClassNotFoundException e) {
            throw new AssertionError("the server has no record " + name + ": update WireContractTest's table", e);
        }
    }

    /** The pointer to the inline JSON body schema of the POST at {@code path}. */
    private static String body(String path) {
        return "/paths/" + path.replace("~", "~0").replace("/", "~1")
                + "/post/requestBody/content/application~1json/schema";
    }

    @Test
    void everyRequestRecordAndItsSchemaAgreeBothWays() throws IOException {
        RecordSchemas schemas = new RecordSchemas(openapi());
        List<String> problems = new ArrayList<>();
        for (Body b : REQUESTS) {
            problems.addAll(schemas.compare(b.record(), b.schema(), false));
        }
        assertThat(problems).as("request records against openapi.json").isEmpty();
    }

    @Test
    void everyAnswerRecordAndItsSchemaAgreeBothWays() throws IOException {
        RecordSchemas schemas = new RecordSchemas(openapi());
        for (Body b : REQUESTS) { // first: which schemas requests share with answers
            schemas.compare(b.record(), b.schema(), false);
        }
        Set<String> problems = new LinkedHashSet<>();
        for (Body b : ANSWERS) {
            problems.addAll(schemas.compare(b.record(), b.schema(), true));
        }
        assertThat(problems).as("answer records against openapi.json").isEmpty();
    }

    @Test
    void everyComponentSchemaHasARecordOrIsSaidToBeBuiltByHand() throws IOException {
        Set<String> unpaired = new TreeSet<>(openapi().path("components").path("schemas").propertyNames());
        for (List<Body> bodies : List.of(REQUESTS, ANSWERS)) {
            bodies.forEach(b -> unpaired.remove(b.schema()));
        }
        unpaired.removeAll(Set.of("Limits", "File", "SessionLimits", "Compare")); // each only inside another
        assertThat(unpaired).as("component schemas checked against no record").isEqualTo(BUILT_BY_HAND);
    }

    /** The comparison can fail: a record with a field the schema lacks, and one the schema has more of. */
    @Test
    void aFieldMissingOnEitherSideIsCaught() throws IOException {
        record Narrow(@JsonProperty("port") int port,
                @JsonProperty("nope") String nope) {}
        List<String> problems = new RecordSchemas(openapi()).compare(Narrow.class, "PortInfo", true);
        assertThat(problems).anySatisfy(p -> assertThat(p).contains("lacks property nope"))
                .anySatisfy(p -> assertThat(p).contains("[path]"));
        record Mistyped(@JsonProperty("port") String port,
                @JsonProperty("path") String path) {}
        assertThat(new RecordSchemas(openapi()).compare(Mistyped.class, "PortInfo", true))
                .anySatisfy(p -> assertThat(p).contains("PortInfo.port is [integer]"));
    }
}
