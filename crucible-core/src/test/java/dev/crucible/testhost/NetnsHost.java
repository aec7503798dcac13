package dev.crucible.testhost;

import static java.lang.foreign.ValueLayout.JAVA_INT;

import com.sun.net.httpserver.HttpServer;
import dev.crucible.os.Linux;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.invoke.MethodHandle;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardProtocolFamily;
import java.nio.channels.ServerSocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A test host: a network namespace the test makes for itself, joined to this machine by a veth pair, with an IPv4
 * address of its own. Tests send traffic only to loopback or to such hosts, never to this machine's own interfaces:
 * what listens here listens in the namespace, and is reached over the veth alone.
 *
 * <p>Each host takes a free /30 of {@value #RANGE}.0.0/16 (none of this machine's addresses or routes overlaps it):
 * this machine's end of the veth is {@code .1}, the host's {@code .2}. Nothing else is touched: no default route, no
 * firewall rule, no forwarding; the veth's connected route is all this machine learns, and it goes with the namespace.
 * The namespace is {@code crucible-th-PID-N} in {@code /run/netns} (the sandboxes' own namespaces are unnamed), so a
 * host left by a JVM that died is known by its pid and removed when the next host is made.
 *
 * <p>A JUnit extension: {@code @RegisterExtension static final NetnsHost HOST = NetnsHost.extension();} makes the host
 * when a test (or a {@code @BeforeAll} method) first uses it, and removes it after the class's {@code @AfterAll}
 * methods; the test that uses it (or the whole class, from {@code @BeforeAll}) is skipped, with the reason printed,
 * only when this JVM is not root or iproute2's {@code ip} is missing: the class's other tests still run.
 * {@link #open()} makes one outside JUnit (a benchmark's main). Thread-safe.
 */
public final class NetnsHost implements AfterAllCallback, AutoCloseable {
    static final String RANGE = "10.231";
    private static final String PREFIX = "crucible-th-";
    private static final Path NAMED = Path.of("/run/netns");
    private static final AtomicInteger MADE = new AtomicInteger();
    private static final int CLONE_NEWNET = 0x40000000;
    private static final MethodHandle SETNS = Linker.nativeLinker().downcallHandle(
            Linker.nativeLinker().defaultLookup().find("setns").orElseThrow(),
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT));

    private Made made;
    private final List<AutoCloseable> inside = new CopyOnWriteArrayList<>();

    /** What {@link #open()} made: the namespace's name and the host's address. */
    private record Made(String name, Inet4Address address) {}

    private NetnsHost() {}

    /** A host made at first use and removed at {@code afterAll}: register it as a static extension. */
    public static NetnsHost extension() {
        return new NetnsHost();
    }

    /**
     * A host made now, removed by {@link #close()}.
     *
     * @throws IOException when it cannot be made (with {@code ip}'s own words), or {@link #unavailable()} says why not
     */
    public static NetnsHost open() throws IOException {
        String why = unavailable();
        if (why != null) {
            throw new IOException(why);
        }
        NetnsHost host = new NetnsHost();
        try {
            host.made();
        } catch (UncheckedIOException e) {
            throw e.getCause();
        }
        return host;
    }

    /** Why no test host can be made here (not root, no iproute2), or null. */
    public static String unavailable() {
        if (!isRoot()) {
            return "a test host is a network namespace, which needs root";
        }
        if (ip() == null) {
            return "a test host needs iproute2's ip (apt-get install iproute2)";
        }
        return null;
    }

    @Override
    public void afterAll(ExtensionContext context) throws IOException {
        if (!context.getRequiredTestClass().isAnnotationPresent(Nested.class)) { // a nested class shares its host
            close();
        }
    }

    /** The host's address, where its servers listen. */
    public Inet4Address address() {
        return made().address();
    }

    /** The namespace's name in {@code /run/netns} ({@code ip netns exec NAME ...}). */
    public String name() {
        return made().name();
    }

    /** {@link #address()} as text: {@code 10.231.X.Y}. */
    public String host() {
        return address().getHostAddress();
    }

    /**
     * Runs {@code action} on a new platform thread that has joined the host's namespace, and returns its result; the
     * thread ends with it. Sockets it makes belong to the host for good (Linux keeps a socket in the namespace it was
     * made in), whichever thread uses them afterwards. A thread it starts starts in the namespace too: make sockets
     * here, start servers outside.
     */
    public <T> T inside(Callable<T> action) throws IOException {
        String path = NAMED.resolve(made().name()).toString();
        AtomicReference<T> result = new AtomicReference<>();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread thread = Thread.ofPlatform().name("crucible-testhost " + made().name()).start(() -> {
            try {
                int fd = Linux.openat2(-100, path, Linux.O_RDONLY | Linux.O_CLOEXEC, 0, 0);
                try {
                    if ((int) SETNS.invokeExact(fd, CLONE_NEWNET) != 0) {
                        throw new IOException("setns(" + path + ") failed");
                    }
                } finally {
                    Linux.close(fd);
                }
                result.set(action.call());
            } catch (Throwable t) {
                failure.set(t);
            }
        });
        try {
            thread.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while waiting for " + thread.getName(), e);
        }
        if (failure.get() instanceof IOException e) {
            throw e;
        }
        if (failure.get() != null) {
            throw new IllegalStateException("in test host " + made().name(), failure.get());
        }
        return result.get();
    }

    /** A TCP listener on the host's address, port 0 (any free one); closed with the host if not before. */
    public ServerSocketChannel listen() throws IOException {
        ServerSocketChannel listener = inside(() -> {
            ServerSocketChannel channel = ServerSocketChannel.open(StandardProtocolFamily.INET);
            channel.bind(new InetSocketAddress(address(), 0), 64);
            return channel;
        });
        inside.add(listener);
        return listener;
    }

    /**
     * The JDK's HTTP server on the host's address, port 0, not started: the caller adds its contexts and starts it
     * (its listening socket is made here, in the namespace, when it is created; so is its idle timer's thread, which
     * makes no socket). Stopped with the host if not before.
     */
    public HttpServer httpServer() throws IOException {
        HttpServer server = inside(() -> HttpServer.create(new InetSocketAddress(address(), 0), 0));
        inside.add(() -> server.stop(0));
        return server;
    }

    /**
     * Stops what {@link #listen()} and {@link #httpServer()} made and deletes the namespace; the veth pair goes with
     * it once nothing of the test holds a socket in it. Idempotent.
     */
    @Override
    public void close() throws IOException {
        Made m;
        synchronized (this) {
            m = made;
            made = null;
        }
        if (m == null) {
            return;
        }
        for (AutoCloseable resource : inside) {
            try {
                resource.close();
            } catch (Exception e) {
                // stopping is all we wanted
            }
        }
        inside.clear();
        run(ip(), "netns", "del", m.name());
    }

    /** The host, made now if it is not yet; skips the calling test (by an assumption) when it cannot be made here. */
    private synchronized Made made() {
        if (made == null) {
            String why = unavailable();
            Capability.NETNS.require(why);
            try {
                made = make();
            } catch (IOException e) {
                throw new UncheckedIOException("cannot make a test host: " + e.getMessage(), e);
            }
        }
        return made;
    }

    /** Makes the next host of this JVM in a free /30, after removing hosts left by JVMs that are gone. */
    private static Made make() throws IOException {
        removeStale();
        long pid = ProcessHandle.current().pid();
        int n = MADE.getAndIncrement();
        String name = PREFIX + pid + "-" + n;
        String hostSide = "cth" + pid + "h" + n; // at most 15 characters: pid_max is 2^22 (7 digits)
        String ip = ip();
        int start = (int) ((pid * 8 + n) % 16384);
        for (int i = 0; i < 16384; i++) {
            int block = (start + i) % 16384;
            int base = toInt(RANGE + ".0.0") | (block << 2);
            if (inUse(base)) {
                continue;
            }
            String near = text(base + 1);
            String far = text(base + 2);
            run(ip, "netns", "add", name);
            try {
                run(ip, "link", "add", hostSide, "type", "veth", "peer", "name", "eth0", "netns", name);
                run(ip, "-n", name, "link", "set", "lo", "up");
                run(ip, "-n", name, "addr", "add", far + "/30", "dev", "eth0");
                run(ip, "-n", name, "link", "set", "eth0", "up");
                run(ip, "addr", "add", near + "/30", "dev", hostSide);
                run(ip, "link", "set", hostSide, "up");
            } catch (IOException | RuntimeException e) {
                run(ip, "netns", "del", name);
                throw e;
            }
            if (addressesOn(base) == 1) { // no other host took the same block at the same moment
                return new Made(name, (Inet4Address) InetAddress.getByName(far));
            }
            run(ip, "netns", "del", name);
        }
        throw new IOException("no free /30 in " + RANGE + ".0.0/16 for a test host");
    }

    /** Deletes the named namespaces of test hosts whose JVM has ended (their veths go with them). */
    private static void removeStale() throws IOException {
        if (!Files.isDirectory(NAMED)) {
            return;
        }
        List<String> stale = new ArrayList<>();
        try (Stream<Path> names = Files.list(NAMED)) {
            for (Path path : names.toList()) {
                String name = path.getFileName().toString();
                if (name.matches(PREFIX.replace("-", "\\-") + "[0-9]+-[0-9]+")) {
                    long pid = Long.parseLong(name.substring(PREFIX.length(), name.lastIndexOf('-')));
                    if (ProcessHandle.of(pid).isEmpty()) {
                        stale.add(name);
                    }
                }
            }
        }
        for (String name : stale) {
            run(ip(), "netns", "del", name);
        }
    }

    /** Whether the /30 at {@code base} overlaps an address or a route of this machine (the default route aside). */
    private static boolean inUse(int base) throws IOException {
        List<String> prefixes = new ArrayList<>();
        for (String line : run(ip(), "-4", "-o", "addr", "show").split("\n")) {
            String[] words = line.trim().split("\\s+");
            for (int i = 0; i + 1 < words.length; i++) {
                if (words[i].equals("inet")) {
                    prefixes.add(words[i + 1]);
                }
            }
        }
        for (String line : run(ip(), "-4", "route", "show", "table", "all").split("\n")) {
            for (String word : line.trim().split("\\s+", 3)) {
                if (word.matches("[0-9.]+(/[0-9]+)?")) {
                    prefixes.add(word);
                    break;
                }
            }
        }
        for (String prefix : prefixes) {
            int slash = prefix.indexOf('/');
            int address = toInt(slash < 0 ? prefix : prefix.substring(0, slash));
            int bits = Math.min(slash < 0 ? 32 : Integer.parseInt(prefix.substring(slash + 1)), 30);
            int mask = bits == 0 ? 0 : -1 << (32 - bits);
            if ((address & mask) == (base & mask)) {
                return true;
            }
        }
        return false;
    }

    /** How many interfaces of this machine have an address in the /30 at {@code base}. */
    private static long addressesOn(int base) throws IOException {
        return run(ip(), "-4", "-o", "addr", "show").lines().filter(line -> {
            String[] words = line.trim().split("\\s+");
            for (int i = 0; i + 1 < words.length; i++) {
                if (words[i].equals("inet")) {
                    String address = words[i + 1].substring(0, words[i + 1].indexOf('/'));
                    return (toInt(address) & -4) == base;
                }
            }
            return false;
        }).count();
    }

    private static int toInt(String dotted) {
        String[] parts = dotted.split("\\.");
        int value = 0;
        for (int i = 0; i < 4; i++) {
            value = (value << 8) | (i < parts.length ? Integer.parseInt(parts[i]) : 0);
        }
        return value;
    }

    private static String text(int address) {
        return (address >>> 24) + "." + ((address >>> 16) & 0xff) + "." + ((address >>> 8) & 0xff) + "."
                + (address & 0xff);
    }

    /** Runs {@code command}; its output, or an IOException with it when it fails. */
    private static String run(String... command) throws IOException {
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        try {
            if (process.waitFor() != 0) {
                throw new IOException(String.join(" ", command) + ": " + out.strip());
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new IOException("interrupted: " + String.join(" ", command), e);
        }
        return out;
    }

    /** iproute2's {@code ip}, by its real path, or null. */
    static String ip() {
        for (String candidate : List.of("/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip", "/bin/ip")) {
            if (Files.isExecutable(Path.of(candidate))) {
                return candidate;
            }
        }
        return null;
    }

    private static boolean isRoot() {
        try {
            return Files.readAllLines(Path.of("/proc/self/status")).stream().filter(l -> l.startsWith("Uid:"))
                    .map(l -> l.substring(4).trim().split("\\s+")[1]).anyMatch("0"::equals);
        } catch (IOException e) {
            return false;
        }
    }
}
