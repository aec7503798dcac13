package dev.crucible.sandbox.launch;

import dev.crucible.sandbox.SandboxSpec;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * The variables a sandbox with egress gets, so that what speaks HTTP finds the proxy on its own loopback: the
 * conventional proxy variables in both cases (curl reads the lower-case ones, Python and most tools either), npm's
 * own settings, and pip's consent to install beside a distribution's read-only Python (PEP 668: in a sandbox, pip
 * can only write the user's site under {@code /workspace}, or an image being built).
 */
final class ProxyEnvironment {
    static final String PROXY_URL = "http://127.0.0.1:" + SandboxSpec.PROXY_PORT;

    static final Map<String, String> VARIABLES;

    static {
        Map<String, String> v = new LinkedHashMap<>();
        for (String name : new String[] {"http_proxy", "https_proxy", "all_proxy"}) {
            v.put(name, PROXY_URL);
            v.put(name.toUpperCase(Locale.ROOT), PROXY_URL);
        }
        // the sandbox's own loopback stays direct: a server the program starts inside is reached without the proxy
        v.put("no_proxy", "localhost,127.0.0.1,::1");
        v.put("NO_PROXY", "localhost,127.0.0.1,::1");
        v.put("npm_config_proxy", PROXY_URL);
        v.put("npm_config_https_proxy", PROXY_URL);
        v.put("npm_config_update_notifier", "false");
        v.put("PIP_BREAK_SYSTEM_PACKAGES", "1");
        VARIABLES = Collections.unmodifiableMap(v);
    }

    private ProxyEnvironment() {}
}
