package dev.crucible.sandbox.launch;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * An OCI runtime configuration ({@code config.json} of a bundle, runtime-spec 1.0) made from bubblewrap's options for
 * the same sandbox, so that the gVisor tier sees exactly the mounts, identity, environment and working directory the
 * namespace tier's {@link LaunchCommand#bwrapArguments} gives: one description of a sandbox, two walls. An option this
 * translation does not know is an error, never skipped: a new bubblewrap option must be given its OCI meaning here.
 */
final class OciBundle {
    private static final JsonMapper JSON = JsonMapper.builder().build();

    private OciBundle() {}

    /**
     * The configuration for {@code bwrap} (bubblewrap's argv, its program first, no {@code --} or command) running
     * {@code command}; {@code skeleton} is the root where no {@code --ro-bind DIR /} names one (it must hold every
     * symlink bubblewrap would make). {@code rlimits}: what the Sentry enforces on the program itself.
     */
    static ObjectNode config(List<String> bwrap, List<String> command, Path skeleton, List<LaunchCommand.Rlimit> rlimits) {
        ObjectNode c = JSON.createObjectNode().put("ociVersion", "1.0.2");
        ObjectNode process = c.putObject("process").put("terminal", false).put("noNewPrivileges", true);
        ObjectNode user = process.putObject("user").put("uid", 0).put("gid", 0);
        ArrayNode args = process.putArray("args");
        command.forEach(args::add);
        ArrayNode env = process.putArray("env");
        process.put("cwd", "/");
        process.putObject("capabilities"); // none of any kind
        ArrayNode limits = process.putArray("rlimits");
        for (LaunchCommand.Rlimit r : rlimits) {
            limits.addObject().put("type", "RLIMIT_" + r.name().toUpperCase(Locale.ROOT))
                    .put("hard", r.value()).put("soft", r.value());
        }
        ObjectNode root = c.putObject("root").put("path", skeleton.toString()).put("readonly", true);
        c.put("hostname", "sandbox");
        ArrayNode mounts = c.putArray("mounts");
        ArrayNode namespaces = c.putObject("linux").putArray("namespaces");
        for (String ns : List.of("pid", "ipc", "uts", "mount", "network")) {
            namespaces.addObject().put("type", ns);
        }
        long size = -1;
        for (int i = 1; i < bwrap.size(); i++) {
            String o = bwrap.get(i);
            switch (o) {
                case "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session",
                        "--clearenv", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
                        "--unshare-net", "--as-pid-1" -> { } // gVisor's sandbox has each of these of its own
                case "--uid" -> user.put("uid", Integer.parseInt(bwrap.get(++i)));
                case "--gid" -> user.put("gid", Integer.parseInt(bwrap.get(++i)));
                case "--hostname" -> c.put("hostname", bwrap.get(++i));
                case "--chdir" -> process.put("cwd", bwrap.get(++i)); // PWD: as bubblewrap sets it, below
                case "--setenv" -> env.add(bwrap.get(++i) + "=" + bwrap.get(++i));
                case "--cap-drop", "--seccomp" -> i++; // no capability at all; the Sentry is the filter
                case "--size" -> size = Long.parseLong(bwrap.get(++i));
                case "--perms" -> i++; // a tmpfs of gVisor's is 1777 at its top already
                case "--proc" -> mount(mounts, bwrap.get(++i), "proc", "proc", List.of());
                case "--dev" -> mount(mounts, bwrap.get(++i), "dev", "dev", List.of());
                case "--mqueue" -> mount(mounts, bwrap.get(++i), "mqueue", "mqueue", List.of());
                case "--tmpfs" -> {
                    mount(mounts, bwrap.get(++i), "tmpfs", "tmpfs", size < 0 ? List.of("nosuid", "nodev")
                            : List.of("nosuid", "nodev", "size=" + size));
                    size = -1;
                }
                case "--ro-bind", "--ro-bind-try", "--bind", "--bind-try" -> {
                    String from = bwrap.get(++i);
                    String to = bwrap.get(++i);
                    if (o.endsWith("-try") && !Files.exists(Path.of(from))) {
                        continue;
                    }
                    boolean readOnly = o.startsWith("--ro");
                    if (to.equals("/")) {
                        root.put("path", from).put("readonly", readOnly);
                    } else {
                        mount(mounts, to, "bind", from, readOnly ? List.of("rbind", "ro", "nosuid", "nodev")
                                : List.of("rbind", "rw", "nosuid", "nodev"));
                    }
                }
                case "--symlink" -> {
                    String target = bwrap.get(++i);
                    String link = bwrap.get(++i);
                    Path made = Path.of(root.get("path").asString()).resolve(link.substring(1));
                    if (!Files.isSymbolicLink(made)) {
                        throw new IllegalStateException("the gVisor root " + root.get("path").asString()
                                + " lacks the link " + link + " -> " + target);
                    }
                }
                default -> throw new IllegalStateException("bubblewrap option " + o + " has no OCI form in"
                        + " OciBundle: give it one");
            }
        }
        if (!process.get("cwd").asString().equals("/")) {
            env.add("PWD=" + process.get("cwd").asString());
        }
        return c;
    }

    private static void mount(ArrayNode mounts, String at, String type, String source, List<String> options) {
        ObjectNode m = mounts.addObject().put("destination", at).put("type", type).put("source", source);
        ArrayNode o = m.putArray("options");
        new ArrayList<>(options).forEach(o::add);
    }

    /** The bundle's {@code config.json} text. */
    static String text(ObjectNode config) {
        return JSON.writeValueAsString(config);
    }
}
