package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.client.CellResult;
import dev.crucible.client.CommandResult;
import dev.crucible.client.Evaluation;
import dev.crucible.client.ExecuteRequest;
import dev.crucible.client.ExecuteResult;
import dev.crucible.client.FileEntry;
import dev.crucible.client.ProcessInfo;
import dev.crucible.client.Rewards;
import dev.crucible.client.RuntimeInfo;
import dev.crucible.client.Session;
import dev.crucible.client.SessionInfo;
import java.io.IOException;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The Java client's records against {@code openapi.json} (which {@link WireContractTest} holds to the server's
 * records), both ways: a field the server writes or reads and the client lacks fails here, as does a client field the
 * server does not know, or one of an incompatible type. The client's names are its components in snake_case.
 */
class ClientWireTest {
    /** What the Java client sends. */
    static final List<WireContractTest.Body> REQUESTS = List.of(
            new WireContractTest.Body(ExecuteRequest.class, "ExecuteRequest"),
            new WireContractTest.Body(Session.Request.class, "SessionCreate"),
            new WireContractTest.Body(Session.Cell.class, "Cell"),
            new WireContractTest.Body(Session.Command.class, "CommandRequest"),
            new WireContractTest.Body(Evaluation.Request.class, "EvaluateRequest"),
            new WireContractTest.Body(Rewards.Request.class, "RewardRequest"));

    /** What the Java client reads. */
    static final List<WireContractTest.Body> ANSWERS = List.of(
            new WireContractTest.Body(ExecuteResult.class, "ExecuteResult"),
            new WireContractTest.Body(RuntimeInfo.class, "Runtime"),
            new WireContractTest.Body(SessionInfo.class, "Session"),
            new WireContractTest.Body(CellResult.class, "CellResult"),
            new WireContractTest.Body(CommandResult.class, "CommandResult"),
            new WireContractTest.Body(ProcessInfo.class, "ProcessInfo"),
            new WireContractTest.Body(ProcessInfo.Output.class, "ProcessOutput"),
            new WireContractTest.Body(FileEntry.class, "FileEntry"),
            new WireContractTest.Body(SessionInfo.Pause.class, "PauseResult"),
            new WireContractTest.Body(SessionInfo.Fork.class, "ForkResult"),
            new WireContractTest.Body(SessionInfo.Snapshot.class, "Snapshot"),
            new WireContractTest.Body(SessionInfo.Commit.class, "CommitResult"),
            new WireContractTest.Body(SessionInfo.Preview.class, "Preview"),
            new WireContractTest.Body(SessionInfo.Port.class, "PortInfo"),
            new WireContractTest.Body(Evaluation.Result.class, "EvaluateResult"),
            new WireContractTest.Body(Rewards.Result.class, "RewardResult"));

    @Test
    void theJavaClientsRecordsHaveEveryFieldOfTheDocumentAndNoOther() throws IOException {
        RecordSchemas schemas = new RecordSchemas(WireContractTest.openapi(), true);
        Set<String> problems = new LinkedHashSet<>();
        for (List<WireContractTest.Body> bodies : List.of(REQUESTS, ANSWERS)) {
            for (WireContractTest.Body b : bodies) { // "required" is the server's promise: not compared here
                problems.addAll(schemas.compare(b.record(), b.schema(), false));
            }
        }
        assertThat(problems).as("the Java client (crucible-client) against openapi.json").isEmpty();
    }

    /** The comparison can fail: the client's record of a session short of one field the server writes. */
    @Test
    void aFieldTheClientLacksIsCaught() throws IOException {
        record ShortSessionInfo(String id, String language, String createdAt, String expiresAt, String lastUsedAt,
                Long idleTimeoutS, String restore, String state, String isolation, SessionInfo.Limits limits,
                String image, String imageDigest, Object network, List<ProcessInfo> processes,
                List<SessionInfo.Port> ports, String onIdle) {}
        assertThat(new RecordSchemas(WireContractTest.openapi(), true).compare(ShortSessionInfo.class, "Session", false))
                .containsExactly("Session has properties [restored] that " + ShortSessionInfo.class.getName()
                        + " does not have");
    }
}
