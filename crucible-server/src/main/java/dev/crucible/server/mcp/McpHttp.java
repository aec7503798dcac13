package dev.crucible.server.mcp;

import dev.crucible.server.access.Auth;
import dev.crucible.server.tools.ToolDispatcher;
import dev.crucible.session.SessionManager;
import dev.crucible.util.Once;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletRequest;
import jakarta.servlet.ServletResponse;
import jakarta.servlet.http.HttpServlet;
import java.io.IOException;
import tools.jackson.databind.json.JsonMapper;

/**
 * The MCP endpoint over streamable HTTP, made on a thread of its own at a lower priority: the SDK's set-up (its JSON
 * schemas, the tools' specifications; about a sixth of the main thread's work in a server's start) is off the path to
 * the server's first answer, on a host whose cores the start keeps busy. {@link #servlet()} is mounted at once and
 * hands each request to the SDK's servlet, waiting for it while it is being made. A failure to make it is logged and
 * answers each MCP request 500; it never happens with a working build (tests make it). Thread-safe.
 */
public final class McpHttp {
    private final Once<McpEndpoint.Http> made;
    private final Late servlet = new Late();

    private McpHttp(Once<McpEndpoint.Http> made) {
        this.made = made;
    }

    /** Starts making the endpoint ({@link McpEndpoint#http}) on a daemon thread, at a lower priority. */
    public static McpHttp startInBackground(ToolDispatcher dispatcher, SessionManager sessions, JsonMapper json,
            Auth auth) {
        McpHttp http = new McpHttp(new Once<>(() -> {
            try {
                return McpEndpoint.http(dispatcher, sessions, json, auth);
            } catch (RuntimeException | Error e) {
                System.getLogger(McpHttp.class.getName()).log(System.Logger.Level.ERROR, "the MCP endpoint cannot"
                        + " start: " + e, e);
                throw e;
            }
        }));
        http.made.startWhenIdle("crucible-mcp-setup");
        return http;
    }

    /** What to mount at {@link McpEndpoint#PATH}. */
    public HttpServlet servlet() {
        return servlet;
    }

    /** Ends the MCP clients' open streams (before the servlet container stops). */
    public void close() {
        try {
            made.get().server().closeGracefully();
        } catch (RuntimeException e) {
            // never made (logged when it failed): no stream to end
        }
    }

    /** Mounted before the SDK's servlet exists: hands every request to it, initialised once with this one's config. */
    private final class Late extends HttpServlet {
        private volatile HttpServlet initialised;

        @Override
        public void service(ServletRequest request, ServletResponse response) throws ServletException, IOException {
            delegate().service(request, response);
        }

        HttpServlet delegate() throws ServletException {
            HttpServlet ready = initialised;
            if (ready != null) {
                return ready;
            }
            synchronized (this) {
                if (initialised == null) {
                    HttpServlet sdk = made.get().servlet();
                    sdk.init(getServletConfig());
                    initialised = sdk;
                }
                return initialised;
            }
        }

        @Override
        public void destroy() {
            if (initialised != null) {
                initialised.destroy();
            }
        }
    }
}
