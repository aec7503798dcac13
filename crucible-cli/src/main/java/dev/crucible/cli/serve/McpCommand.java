package dev.crucible.cli.serve;

import dev.crucible.Crucible;
import dev.crucible.cli.support.CliSupport;
import dev.crucible.cli.support.ExitCodes;
import dev.crucible.server.ServerConfig;
import dev.crucible.server.mcp.McpEndpoint;
import dev.crucible.server.services.Services;
import dev.crucible.session.spec.SessionConfig;
import io.modelcontextprotocol.server.McpSyncServer;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code crucible mcp}: an MCP server on stdin/stdout (JSON-RPC lines) for agents that start their tools as
 * processes (Claude Desktop, IDEs, the MCP SDK's stdio client). Runs on the local engine; logs go to stderr, so stdout
 * carries nothing but the protocol. Ends when stdin ends.
 */
@Command(name = "mcp", mixinStandardHelpOptions = true,
        description = "Serve the Crucible tools (run code, sessions, files, runtimes) over MCP on stdin/stdout.")
public final class McpCommand implements Callable<Integer> {
    @Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Option(names = "--data-dir", paramLabel = "DIR",
            description = "Where session files live (env CRUCIBLE_DATA_DIR; the default of crucible serve).")
    Path dataDir;

    @Option(names = "--runtimes", paramLabel = "FILE", description = "A runtimes TOML file (env CRUCIBLE_RUNTIMES).")
    Path runtimesFile;

    @Override
    public Integer call() throws Exception {
        PrintWriter err = spec.commandLine().getErr();
        Path data = dataDir != null ? dataDir : ServerConfig.defaultDataDir(System.getenv());
        try {
            Files.createDirectories(data);
        } catch (IOException e) {
            return CliSupport.fail(err, new CliSupport.Failure(ExitCodes.USAGE, "cannot create the data directory "
                    + data + ": " + e.getMessage()));
        }
        return CliSupport.withEngine(err, CliSupport.runtimesFile(runtimesFile), engine -> serve(engine, data, err));
    }

    private static int serve(Crucible engine, Path data, PrintWriter err) throws Exception {
        engine.sandbox().host().warnings().forEach(w -> err.println("crucible: warning: " + w));
        err.flush();
        CountDownLatch ended = new CountDownLatch(1);
        InputStream in = new FilterInputStream(System.in) {
            @Override
            public int read() throws IOException {
                return seen(super.read());
            }

            @Override
            public int read(byte[] b, int off, int len) throws IOException {
                return seen(super.read(b, off, len));
            }

            private int seen(int n) {
                if (n < 0) {
                    ended.countDown();
                }
                return n;
            }
        };
        try (Services services = Services.start(engine, SessionConfig.defaults(data), ServerConfig.defaults().turns())) {
            McpSyncServer server = McpEndpoint.stdio(services, in, System.out);
            ended.await();
            server.close();
        }
        return 0;
    }
}
