package dev.crucible.server.mcp;

import dev.crucible.client.ToolOutcome;
import dev.crucible.client.Tools;
import dev.crucible.error.RequestException;
import dev.crucible.server.access.Auth;
import dev.crucible.server.access.BrowserGuard;
import dev.crucible.server.http.ErrorBody;
import dev.crucible.server.services.Services;
import dev.crucible.server.tools.ToolDispatcher;
import dev.crucible.session.SessionManager;
import io.modelcontextprotocol.common.McpTransportContext;
import io.modelcontextprotocol.json.McpJsonDefaults;
import io.modelcontextprotocol.server.McpServer;
import io.modelcontextprotocol.server.McpServerFeatures;
import io.modelcontextprotocol.server.McpSyncServer;
import io.modelcontextprotocol.server.transport.HttpServletStreamableServerTransportProvider;
import io.modelcontextprotocol.server.transport.ServerTransportSecurityValidator;
import io.modelcontextprotocol.server.transport.StdioServerTransportProvider;
import io.modelcontextprotocol.spec.McpSchema;
import jakarta.servlet.Filter;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Crucible as an MCP server (the official MCP Java SDK): the tools of {@link Tools.Set#ALL} — run code, sessions,
 * their files, runtimes — over streamable HTTP at {@code /mcp} on the API's port, or over stdio for
 * {@code crucible mcp}. Each MCP session gets a Crucible session of its own on first use of a session tool.
 */
public final class McpEndpoint {
    /** Where the HTTP server mounts the MCP servlet. */
    public static final String PATH = "/mcp";
    private static final String OWNER = "crucible.owner";
    private static final String INSTRUCTIONS = "Crucible runs code in isolated sandboxes without network. Use "
            + "run_code for one-off programs (print what you need) and run_in_session for work that builds on "
            + "earlier steps, like a notebook; the file tools read and write the session's /workspace.";

    private final ToolDispatcher dispatcher;
    private final SessionManager sessions;
    private final JsonMapper json;
    /** MCP session id → the Crucible session its session tools use. */
    private final Map<String, String> defaults = new ConcurrentHashMap<>();

    private McpEndpoint(ToolDispatcher dispatcher, SessionManager sessions, JsonMapper json) {
        this.dispatcher = dispatcher;
        this.sessions = sessions;
        this.json = json;
    }

    /** The MCP server on the streamable HTTP transport (a servlet to mount at {@link #PATH}). */
    public record Http(HttpServletStreamableServerTransportProvider servlet, McpSyncServer server) {}

    /**
     * MCP over streamable HTTP. Host and Origin are checked by {@link #filter} with the API's own rules, so the SDK's
     * validator (fixed lists, fixed before the server knows the port it is given) checks nothing.
     */
    public static Http http(ToolDispatcher dispatcher, SessionManager sessions, JsonMapper json, Auth auth) {
        HttpServletStreamableServerTransportProvider transport = HttpServletStreamableServerTransportProvider.builder()
                .jsonMapper(McpJsonDefaults.getMapper()).mcpEndpoint(PATH)
                .securityValidator(ServerTransportSecurityValidator.NOOP)
                .contextExtractor((HttpServletRequest request) -> McpTransportContext.create(Map.of(OWNER,
                        auth.owner(request.getHeader("Authorization")))))
                .build();
        return new Http(transport, new McpEndpoint(dispatcher, sessions, json).serve(McpServer.sync(transport)));
    }

    /** Serves MCP over {@code in}/{@code out} (JSON-RPC lines) until {@code in} ends. */
    public static McpSyncServer stdio(Services services, InputStream in, OutputStream out) {
        var transport = new StdioServerTransportProvider(McpJsonDefaults.getMapper(), in, out);
        return new McpEndpoint(services.tools(), services.sessions(), services.json()).serve(McpServer.sync(transport));
    }

    private McpSyncServer serve(McpServer.SyncSpecification<?> spec) {
        List<McpServerFeatures.SyncToolSpecification> tools = new ArrayList<>();
        for (Tools.Tool tool : Tools.of(Tools.Set.ALL, dispatcher.languages())) {
            McpSchema.Tool described = McpSchema.Tool.builder().name(tool.name()).description(tool.description())
                    .inputSchema(McpJsonDefaults.getMapper(), tool.inputSchema().toString()).build();
            tools.add(McpServerFeatures.SyncToolSpecification.builder().tool(described)
                    .callHandler((exchange, request) -> {
                        Object owner = exchange.transportContext().get(OWNER);
                        String key = exchange.sessionId() == null ? "" : exchange.sessionId();
                        return call(owner == null ? "" : owner.toString(), key, tool.name(), request.arguments());
                    }).build());
        }
        return spec.serverInfo("crucible", version()).instructions(INSTRUCTIONS).validateToolInputs(false)
                .capabilities(McpSchema.ServerCapabilities.builder().tools(false).build()).tools(tools).build();
    }

    private McpSchema.CallToolResult call(String owner, String key, String tool, Map<String, Object> arguments) {
        ToolOutcome outcome;
        try {
            JsonNode args = arguments == null ? null : json.valueToTree(arguments);
            outcome = dispatcher.call(owner, tool, args, o -> defaultSession(o, key));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            outcome = ToolOutcome.error("the server is shutting down");
        }
        McpSchema.CallToolResult.Builder result = McpSchema.CallToolResult.builder().isError(outcome.isError());
        for (ToolOutcome.Content c : outcome.content()) {
            switch (c) {
                case ToolOutcome.Content.Image i -> result.addContent(new McpSchema.ImageContent(null, i.data(), i.mimeType()));
                case ToolOutcome.Content.Text t -> result.addTextContent(t.text());
            }
        }
        return result.build();
    }

    /** The MCP session's Crucible session: the one it had while it still exists, else a new one. */
    private String defaultSession(String owner, String key) throws InterruptedException {
        synchronized (defaults) {
            String id = defaults.get(key);
            if (id != null) {
                try {
                    sessions.require(owner, id);
                    return id;
                } catch (RequestException e) {
                    defaults.remove(key); // closed or reaped: start another
                }
            }
            id = sessions.create(owner, new SessionManager.CreateRequest(null, null, null, null)).id();
            defaults.put(key, id);
            return id;
        }
    }

    private static String version() {
        String v = McpEndpoint.class.getPackage().getImplementationVersion();
        return v == null ? "dev" : v;
    }

    /**
     * Before the MCP servlet: the browser guard's Host and Origin rules, then bearer auth (the guard first, as on the
     * API: a rebinding page must not even learn whether a token is needed); a refusal is the API's JSON error.
     */
    public static Filter filter(BrowserGuard guard, Auth auth, JsonMapper json) {
        return (request, response, chain) -> {
            HttpServletRequest http = (HttpServletRequest) request;
            try {
                guard.checkHostAndOrigin(http.getHeader("Host"), http.getHeader("Origin"), http.getLocalPort());
                auth.check(http.getHeader("Authorization"));
            } catch (RequestException e) {
                HttpServletResponse r = (HttpServletResponse) response;
                r.setStatus(e.code().httpStatus());
                r.setContentType("application/json");
                r.getOutputStream().write(json.writeValueAsBytes(ErrorBody.of(e.code(), e.getMessage())));
                return;
            }
            chain.doFilter(request, response);
        };
    }
}
