package dev.crucible.cli.session;

import dev.crucible.Crucible;
import dev.crucible.cli.support.CliSupport;
import dev.crucible.cli.support.ExitCodes;
import dev.crucible.error.RequestException;
import dev.crucible.server.ServerConfig;
import dev.crucible.server.services.Services;
import dev.crucible.session.SessionManager;
import dev.crucible.session.process.CommandRequest;
import dev.crucible.session.spec.SessionConfig;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.Map;
import tools.jackson.databind.JsonNode;

/** The local engine, with a session kept in a temporary data directory removed at the end. */
final class LocalSession implements SessionBackend {
    private final Services services;
    private final SessionManager sessions;
    private final String id;
    private final Path data;

    private LocalSession(Services services, String id, Path data) {
        this.services = services;
        this.sessions = services.sessions();
        this.id = id;
        this.data = data;
    }

    static LocalSession open(Path runtimes, String language, String snapshot, String isolation) {
        Crucible engine = CliSupport.start(runtimes);
        Services services = null;
        try {
            Path data = Files.createTempDirectory("crucible-session-");
            services = Services.start(engine, SessionConfig.defaults(data), ServerConfig.defaults().turns());
            String id = services.sessions().create("", new SessionManager.CreateRequest(language, null, null, null,
                    null, null, null, snapshot, isolation)).id();
            return new LocalSession(services, id, data);
        } catch (RequestException e) {
            if (services != null) {
                services.close();
            }
            engine.close();
            int exit = CliSupport.exitCodeOf(e);
            throw new CliSupport.Failure(exit, (exit == ExitCodes.SANDBOX_ERROR ? "cannot start a session: " : "")
                    + e.getMessage());
        } catch (IOException | InterruptedException e) {
            if (services != null) {
                services.close();
            }
            engine.close();
            throw new CliSupport.Failure(ExitCodes.SANDBOX_ERROR, "cannot start a session: " + e.getMessage());
        }
    }

    @Override
    public JsonNode execute(String code, String mode) throws Exception {
        return CliSupport.json().valueToTree(sessions.execute("", id, code, mode, null));
    }

    @Override
    public void interrupt() {
        sessions.interrupt("", id);
    }

    @Override
    public void restart() throws Exception {
        sessions.restart("", id);
    }

    @Override
    public JsonNode info() {
        return CliSupport.json().valueToTree(sessions.get("", id));
    }

    @Override
    public JsonNode files() {
        return CliSupport.json().valueToTree(Map.of("files", sessions.files("", id).list("")));
    }

    @Override
    public JsonNode command(String line) throws Exception {
        return CliSupport.json().valueToTree(sessions.command("", id,
                CommandRequest.shell(line)));
    }

    @Override
    public JsonNode state(String action, Map<String, Object> body) throws Exception {
        var pauses = sessions.pauses("", id);
        return CliSupport.json().valueToTree(switch (action) {
            case "pause" -> pauses.pause();
            case "resume" -> pauses.resume();
            case "fork" -> pauses.fork((Integer) body.getOrDefault("count", 1));
            case "snapshots" -> pauses.snapshot((String) body.get("name"));
            case "commit" -> pauses.commit((String) body.get("tag"));
            default -> throw new IllegalArgumentException(action);
        });
    }

    @Override
    public ShellAttach.Opener shell() {
        return ShellAttach.local(sessions.processes("", id));
    }

    @Override
    public void close() {
        try {
            sessions.delete("", id);
        } catch (RuntimeException e) {
            // best effort
        }
        services.close();
        services.engine().close();
        try (var walk = Files.walk(data)) {
            walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            // a temporary directory
        }
    }
}
