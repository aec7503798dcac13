package dev.crucible.cli.session;

import java.util.Map;
import tools.jackson.databind.JsonNode;

/** Where cells go: the local engine or a server. */
interface SessionBackend extends AutoCloseable {
    JsonNode execute(String code, String mode) throws Exception;

    void interrupt();

    void restart() throws Exception;

    JsonNode files() throws Exception;

    /** Runs a shell line in the session's sandbox, beside its interpreter (POST …/commands). */
    JsonNode command(String line) throws Exception;

    /**
     * A call that changes what the session is (issue 30): {@code pause}, {@code resume}, {@code fork}
     * ({@code {count}}), {@code snapshots} ({@code {name}}) or {@code commit} ({@code {tag}}); the API's answer.
     */
    JsonNode state(String action, Map<String, Object> body) throws Exception;

    /** The session as the API shows it (GET /v1/sessions/{id}): its id, language, state, isolation… */
    JsonNode info() throws Exception;

    /** A login shell on a terminal of the session's sandbox. */
    ShellAttach.Opener shell();

    @Override
    void close();
}
