package dev.crucible.egress;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.crucible.testhost.NetnsHost;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Base64;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.zip.GZIPOutputStream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;

/**
 * A real package index for the egress tests: a PyPI "simple" index (PEP 503) serving two pure-Python wheels built here
 * ({@code crucible-demo-a}, which requires {@code crucible-demo-b}), and an npm registry (a registry document and its
 * tarball) for {@code crucible-demo}. It runs on a {@link NetnsHost}, a private address of a network namespace of the
 * test's (a private index on the LAN, which the operator lists verbatim). It records every path asked for.
 */
public final class PackageIndex implements AutoCloseable {
    private final HttpServer server;
    private final String host;
    private final Map<String, byte[]> files = new LinkedHashMap<>();
    private final List<String> requests = new CopyOnWriteArrayList<>();

    private PackageIndex(HttpServer server) {
        this.server = server;
        this.host = server.getAddress().getAddress().getHostAddress();
    }

    /** Builds the packages and serves them on {@code on}, at its address and a free port. */
    public static PackageIndex start(NetnsHost on) throws IOException {
        PackageIndex index = new PackageIndex(on.httpServer());
        index.build(); // before the server starts: its handlers then read the files without a lock
        index.server.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
        index.server.createContext("/", index::answer);
        index.server.start();
        return index;
    }

    /** The address clients use: the test host's. */
    public String host() {
        return host;
    }

    public int port() {
        return server.getAddress().getPort();
    }

    /** The operator's allowlist entry for this index: {@code HOST:PORT}, an address listed verbatim. */
    public String allowEntry() {
        return host + ":" + port();
    }

    /** pip's {@code --index-url}. */
    public String pypiUrl() {
        return "http://" + allowEntry() + "/simple/";
    }

    /** npm's {@code --registry}. */
    public String npmUrl() {
        return "http://" + allowEntry() + "/npm/";
    }

    /** Every path asked for, in order. */
    public List<String> requests() {
        return List.copyOf(requests);
    }

    private void build() throws IOException {
        wheel("crucible-demo-a", "crucible_demo_a",
                "from crucible_demo_b import greet\n\ndef hello():\n    return greet('a')\n", "crucible-demo-b");
        wheel("crucible-demo-b", "crucible_demo_b", "def greet(who):\n    return 'hello from ' + who\n", null);
        npm("crucible-demo", "module.exports = () => 'hello from npm';\n");
    }

    private void wheel(String project, String module, String code, String requires) throws IOException {
        String distInfo = module + "-1.0.dist-info/";
        Map<String, byte[]> entries = new LinkedHashMap<>();
        entries.put(module + "/__init__.py", code.getBytes(StandardCharsets.UTF_8));
        entries.put(distInfo + "METADATA", ("Metadata-Version: 2.1\nName: " + project + "\nVersion: 1.0\n"
                + (requires == null ? "" : "Requires-Dist: " + requires + "\n")).getBytes(StandardCharsets.UTF_8));
        entries.put(distInfo + "WHEEL", ("Wheel-Version: 1.0\nGenerator: crucible-test\nRoot-Is-Purelib: true\n"
                + "Tag: py3-none-any\n").getBytes(StandardCharsets.UTF_8));
        StringBuilder record = new StringBuilder();
        for (Map.Entry<String, byte[]> e : entries.entrySet()) {
            record.append(e.getKey()).append(",sha256=").append(Base64.getUrlEncoder().withoutPadding()
                    .encodeToString(digest("SHA-256", e.getValue()))).append(',').append(e.getValue().length).append('\n');
        }
        record.append(distInfo).append("RECORD,,\n");
        entries.put(distInfo + "RECORD", record.toString().getBytes(StandardCharsets.UTF_8));
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (ZipOutputStream zip = new ZipOutputStream(bytes)) {
            for (Map.Entry<String, byte[]> e : entries.entrySet()) {
                zip.putNextEntry(new ZipEntry(e.getKey()));
                zip.write(e.getValue());
                zip.closeEntry();
            }
        }
        String file = module + "-1.0-py3-none-any.whl";
        files.put("/files/" + file, bytes.toByteArray());
        String html = "<!DOCTYPE html><html><body><a href=\"/files/" + file + "#sha256="
                + HexFormat.of().formatHex(digest("SHA-256", bytes.toByteArray())) + "\">" + file + "</a></body></html>\n";
        files.put("/simple/" + project + "/", html.getBytes(StandardCharsets.UTF_8));
    }

    private void npm(String name, String code) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (TarArchiveOutputStream tar = new TarArchiveOutputStream(new GZIPOutputStream(bytes))) {
            Map<String, byte[]> entries = Map.of(
                    "package/package.json", ("{\"name\": \"" + name + "\", \"version\": \"1.0.0\", \"main\": \"index.js\"}\n")
                            .getBytes(StandardCharsets.UTF_8),
                    "package/index.js", code.getBytes(StandardCharsets.UTF_8));
            for (Map.Entry<String, byte[]> e : entries.entrySet()) {
                TarArchiveEntry entry = new TarArchiveEntry(e.getKey());
                entry.setSize(e.getValue().length);
                entry.setMode(0644);
                tar.putArchiveEntry(entry);
                tar.write(e.getValue());
                tar.closeArchiveEntry();
            }
        }
        byte[] tgz = bytes.toByteArray();
        String tarball = "/npm/" + name + "/-/" + name + "-1.0.0.tgz";
        files.put(tarball, tgz);
        String doc = "{\"name\": \"" + name + "\", \"dist-tags\": {\"latest\": \"1.0.0\"}, \"versions\": {\"1.0.0\": {"
                + "\"name\": \"" + name + "\", \"version\": \"1.0.0\", \"main\": \"index.js\", \"dist\": {"
                + "\"tarball\": \"http://" + allowEntry() + tarball + "\", "
                + "\"shasum\": \"" + HexFormat.of().formatHex(digest("SHA-1", tgz)) + "\", "
                + "\"integrity\": \"sha512-" + Base64.getEncoder().encodeToString(digest("SHA-512", tgz)) + "\"}}}}\n";
        files.put("/npm/" + name, doc.getBytes(StandardCharsets.UTF_8));
    }

    private void answer(HttpExchange exchange) throws IOException {
        String path = exchange.getRequestURI().getPath();
        requests.add(path);
        byte[] body = files.get(path);
        if (body == null && path.startsWith("/simple/") && !path.endsWith("/")) {
            body = files.get(path + "/");
        }
        try (exchange) {
            if (body == null) {
                exchange.sendResponseHeaders(404, -1);
                return;
            }
            exchange.getResponseHeaders().set("Content-Type", path.startsWith("/simple/") ? "text/html"
                    : path.endsWith(".tgz") || path.endsWith(".whl") ? "application/octet-stream" : "application/json");
            exchange.sendResponseHeaders(200, body.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(body);
            }
        }
    }

    private static byte[] digest(String algorithm, byte[] data) {
        try {
            return MessageDigest.getInstance(algorithm).digest(data);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public void close() {
        server.stop(0);
    }
}
