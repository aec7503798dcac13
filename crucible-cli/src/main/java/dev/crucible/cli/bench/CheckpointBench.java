package dev.crucible.cli.bench;

import dev.crucible.Crucible;
import dev.crucible.runtime.RuntimeRegistry;
import dev.crucible.sandbox.Isolation;
import dev.crucible.sandbox.Limits;
import dev.crucible.sandbox.Sandbox;
import dev.crucible.sandbox.SandboxSpec;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Comparator;
import java.util.List;
import java.util.Map;

/**
 * {@code crucible bench --checkpoint MB}: saving a gVisor session's sandbox whole and starting it again (issue 29's
 * building block of pause, resume and fork) with MB of random bytes in its interpreter's memory, against a new gVisor
 * sandbox of the same interpreter and a bare {@code python3} started by this JVM, each timed to its first answer, in
 * alternating rounds of one run.
 */
final class CheckpointBench {
    private static final int NUMBER = 2800; // a session number of this process's own uid block
    private static final String LOOP = "import sys\nfor line in sys.stdin:\n    exec(line)\n    sys.stdout.flush()";

    int run(PrintWriter out, Crucible engine, int megabytes, int rounds) throws Exception {
        Sandbox sandbox = engine.sandbox();
        String why = sandbox.host().isolationUnavailable(Isolation.GVISOR);
        if (why != null) {
            out.println("gVisor is not available here: " + why);
            return 1;
        }
        String python = RuntimeRegistry.builtIn().find("python").orElseThrow().runCommand()
                .getFirst();
        Path dir = Files.createTempDirectory("crucible-checkpoint-bench-");
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx--x--x"));
        Path workspace = Files.createDirectories(dir.resolve("workspace"));
        SandboxSpec spec = new SandboxSpec(List.of(python, "-u", "-c", LOOP), Map.of(), Map.of(), null, false,
                List.of(), null, null, new Limits(600_000, 600_000, megabytes + 256, 64 * 1024, 64), workspace)
                .withIsolation(Isolation.GVISOR);
        double[] bare = new double[rounds], fresh = new double[rounds], save = new double[rounds],
                restore = new double[rounds];
        long imageBytes = 0;
        Sandbox.Interactive held = sandbox.open(spec, NUMBER, 1, dir.resolve("log"));
        try {
            ask(held, "x = __import__('os').urandom(" + megabytes + " * 1024 * 1024); print(len(x))");
            for (int r = 0; r < rounds; r++) {
                long t = System.nanoTime();
                Process p = new ProcessBuilder(python, "-u", "-c", LOOP).redirectError(ProcessBuilder.Redirect.DISCARD)
                        .start();
                answer(p.getOutputStream(), new BufferedReader(new InputStreamReader(p.getInputStream(),
                        StandardCharsets.UTF_8)), "print(1)");
                bare[r] = Figures.msSince(t);
                p.destroyForcibly().waitFor();

                t = System.nanoTime();
                Sandbox.Interactive box = sandbox.open(spec, NUMBER + 1, 1, dir.resolve("log"));
                ask(box, "print(1)");
                fresh[r] = Figures.msSince(t);
                box.close();

                Path image = dir.resolve("image-" + r);
                t = System.nanoTime();
                held.checkpoint(image);
                save[r] = Figures.msSince(t);
                imageBytes = Files.size(image.resolve("checkpoint.img"));
                held.close();
                t = System.nanoTime();
                held = sandbox.restore(spec, NUMBER, 1, dir.resolve("log"), image);
                String n = ask(held, "print(len(x))");
                restore[r] = Figures.msSince(t);
                if (!n.equals(Integer.toString(megabytes * 1024 * 1024))) {
                    throw new IOException("the restored interpreter lost its memory: " + n);
                }
                delete(image);
            }
        } finally {
            held.close();
            delete(dir);
        }
        double b = Figures.median(bare), f = Figures.median(fresh);
        out.printf("gVisor (%s): a Python session holding %d MiB of random bytes, %d rounds, medians%n",
                sandbox.host().isolationDescription(Isolation.GVISOR), megabytes, rounds);
        out.printf("  %-44s %8.1f ms  %6.2fx bare%n", "bare python3, to its first answer", b, 1.0);
        out.printf("  %-44s %8.1f ms  %6.2fx bare%n", "a new gVisor sandbox, to its first answer", f, f / b);
        out.printf("  %-44s %8.1f ms  %6.2fx a new sandbox%n", "checkpoint (saved whole; the sandbox ends)",
                Figures.median(save), Figures.median(save) / f);
        out.printf("  %-44s %8.1f ms  %6.2fx a new sandbox%n", "restore, to its first answer", Figures.median(restore),
                Figures.median(restore) / f);
        out.printf("  image: %.1f MB for %d MiB held%n", imageBytes / 1e6, megabytes);
        return 0;
    }

    private static String ask(Sandbox.Interactive box, String line) throws IOException {
        return answer(box.stdin(), new BufferedReader(new InputStreamReader(box.stdout(), StandardCharsets.UTF_8)),
                line);
    }

    private static String answer(OutputStream in, BufferedReader out, String line) throws IOException {
        in.write((line + "\n").getBytes(StandardCharsets.UTF_8));
        in.flush();
        String answer = out.readLine();
        if (answer == null) {
            throw new IOException("the interpreter ended before it answered " + line);
        }
        return answer;
    }



    private static void delete(Path p) throws IOException {
        try (var walk = Files.walk(p)) {
            for (Path q : walk.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(q);
            }
        }
    }
}
