package dev.crucible.sandbox.bwrap;

import dev.crucible.sandbox.SandboxRoot;
import dev.crucible.sandbox.SandboxSpec;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;

/** What a launch gives its sandbox's uid before it starts: a writable build directory, a writable root, a workspace. */
final class Lending {
    private Lending() {}

    /** A writable build directory belongs to the run's own uid while it runs (when root). */
    static void buildDir(Slots.Claim claim, SandboxSpec spec) throws IOException {
        if (spec.buildDir() != null && spec.buildWritable() && claim.uid() >= 0) {
            claim.lend(spec.buildDir());
        }
    }
    /** A writable root (an image build's copy) belongs to the run's own uid, root inside its user namespace. */
    static void root(Slots.Claim claim, SandboxSpec spec) throws IOException {
        if (spec.root() instanceof SandboxRoot.Writable(Path dir) && claim.uid() >= 0) {
            WritableRoot.giveTo(dir, claim.uid());
        }
    }
    /** A session's workspace belongs to the session's uid (when root) and to no one else. */
    static void workspace(Path workspace, int uid) throws IOException {
        if (uid >= 0) {
            Files.setAttribute(workspace, "unix:uid", uid, LinkOption.NOFOLLOW_LINKS);
            Files.setAttribute(workspace, "unix:gid", uid, LinkOption.NOFOLLOW_LINKS);
        }
        Files.setPosixFilePermissions(workspace, PosixFilePermissions.fromString("rwx------"));
    }
}
