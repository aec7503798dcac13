package dev.crucible.sandbox.bwrap;

import dev.crucible.sandbox.SandboxRoot;
import dev.crucible.sandbox.SandboxSpec;
import dev.crucible.sandbox.cgroup.Cgroups;
import dev.crucible.sandbox.launch.LaunchCommand;
import dev.crucible.util.Once;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Objects;

/**
 * Sessions with a root of their own ({@link SandboxRoot.Overlaid}, issue 27): whether this host can give one, the
 * skeleton and layers written when one is made, and the launcher's argv with the session's block of host uids.
 */
final class SessionRoots {
    private final Slots slots;
    private final LaunchCommand command;

    /** Why a layer's host directory cannot be idmapped here, asked once: "" when all can. */
    private final Once<String> idmap;

    SessionRoots(Slots slots, LaunchCommand command) {
        this.slots = slots;
        this.command = command;
        this.idmap = new Once<>(() -> SandboxRoot.Layer.hostDirs().stream()
                .map(dir -> command.idmapUnavailable(Path.of(dir))).filter(Objects::nonNull).findFirst()
                .orElse(""));
    }

    /** Why sessions get no root of their own here, or null when they do. */
    String unavailable() {
        if (slots.sessionRootUid(0) < 0) {
            return "a session's own root needs the server to run as root";
        }
        if (!command.supervises()) {
            return "a session's own root needs crucible-launch and crucible-supervisor (a C compiler at build time)";
        }
        if (!kernelAtLeast(System.getProperty("os.version", ""), 5, 19)) {
            return "a session's own root needs Linux 5.19 or later (idmapped lower layers of overlayfs)";
        }
        String probed = idmap.get();
        return probed.isEmpty() ? null : "a session's own root needs the host's /usr and /var/lib/dpkg on file"
                + " systems that can be idmapped (ext4, xfs, btrfs…; not an overlay of a container's root): " + probed;
    }

    /** Writes session {@code number}'s root skeleton and its layers' empty directories, all its root's. */
    void prepare(SandboxRoot.Overlaid own, int number, Path syntheticEtc, List<String> hostFiles) throws IOException {
        String why = unavailable();
        if (why != null) {
            throw new IOException(why);
        }
        long rootUid = slots.sessionRootUid(number);
        RootSkeleton.write(own.root(), syntheticEtc, hostFiles, rootUid, slots.sessionUid(number));
        layers(own, rootUid);
    }

    /**
     * The launcher's argv for session {@code number}'s sandbox (as host uid {@code uid} for its user), its mount points
     * made first; a layer the session was made without (by an older Crucible) is made empty now.
     */
    List<String> argv(int number, int uid, Cgroups.RunGroup group, SandboxSpec spec, SandboxNetwork network,
            ControlListener control) throws IOException {
        long rootUid = slots.sessionRootUid(number);
        if (rootUid < 0 || control == null) {
            throw new IOException("a session with root inside needs the server to run as root with crucible-launch"
                    + " and crucible-supervisor built");
        }
        if (spec.root() instanceof SandboxRoot.Overlaid own) {
            layers(own, rootUid);
            for (SandboxRoot.Layer layer : own.layers()) {
                RootSkeleton.mountPoint(own.mountPoint(layer));
                RootSkeleton.mountPoint(own.lowerPoint(layer));
            }
        }
        return command.rootedArgv(rootUid, uid, group, spec, network == null ? null : network.namespace().path(),
                control.path());
    }

    private static void layers(SandboxRoot.Overlaid own, long rootUid) throws IOException {
        for (SandboxRoot.Layer layer : own.layers()) {
            RootSkeleton.layer(layer.upper(), rootUid);
            RootSkeleton.layer(layer.work(), rootUid);
        }
    }

    /** Whether a kernel release ({@code os.version}: "6.18.44-…") is at least {@code major.minor}. */
    static boolean kernelAtLeast(String release, int major, int minor) {
        String[] parts = release.split("[^0-9]+", 3);
        try {
            int a = Integer.parseInt(parts[0]);
            int b = parts.length > 1 ? Integer.parseInt(parts[1]) : 0;
            return a > major || a == major && b >= minor;
        } catch (NumberFormatException e) {
            return false;
        }
    }
}
