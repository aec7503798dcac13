package dev.crucible.cli.bench;

import dev.crucible.cli.support.CliSupport;
import java.io.IOException;
import java.io.PrintWriter;
import tools.jackson.databind.JsonNode;

/**
 * {@code crucible bench --sessions --pause MB}, second part (issue 30): a snapshot of a Python session holding 100 MiB
 * of files, and a new session made from it, against copying the same files in the session's own sandbox (a cell's
 * {@code shutil.copytree} and {@code os.sync}) in the same run; with {@code --image REF}, a commit of a session in that image that wrote a package into
 * {@code ~/.local} (no package index is reachable from a sandbox here), and a session in the committed image importing
 * it, against a new session in the base image.
 */
final class SnapshotBench {
    private static final int FILES = 10;
    private static final int FILE_MB = 10;
    private static final int MODULES = 40;

    private final SessionBench http;

    SnapshotBench(SessionBench http) {
        this.http = http;
    }

    int run(PrintWriter out, String image, int rounds) throws Exception {
        double[] copy = new double[rounds], snapshot = new double[rounds], made = new double[rounds];
        String keeps = null;
        String id = create("{\"language\": \"python\"}");
        try {
            cell(id, "import os\nos.makedirs('/workspace/data', exist_ok=True)\nfor i in range(" + FILES + "):\n"
                    + "    open('/workspace/data/f%d' % i, 'wb').write(os.urandom(" + FILE_MB + " << 20))\n");
            for (int r = 0; r < rounds; r++) {
                http.call("POST", "/v1/sessions/" + id + "/resume", "{}"); // behind gVisor a snapshot leaves it paused
                long t = System.nanoTime();
                cell(id, "import os, shutil; shutil.copytree('/workspace/data', '/workspace/copy'); os.sync()");
                copy[r] = Figures.msSince(t);
                cell(id, "shutil.rmtree('/workspace/copy')");

                t = System.nanoTime();
                JsonNode taken = http.call("POST", "/v1/sessions/" + id + "/snapshots", "{\"name\": \"bench-" + r
                        + "\"}");
                snapshot[r] = Figures.msSince(t);
                keeps = taken.path("keeps").asString("");
                t = System.nanoTime();
                String child = create("{\"snapshot\": \"bench-" + r + "\"}");
                String files = cell(child, "len(__import__('os').listdir('/workspace/data'))");
                made[r] = Figures.msSince(t);
                if (!files.equals(Integer.toString(FILES))) {
                    throw new IOException("the session made from the snapshot has " + files + " files, not " + FILES);
                }
                http.call("DELETE", "/v1/sessions/" + child, null);
                http.call("DELETE", "/v1/snapshots/bench-" + r, null);
            }
        } finally {
            http.call("DELETE", "/v1/sessions/" + id, null);
        }
        double c = Figures.median(copy);
        out.printf("a session holding %d MiB of files (%d rounds, medians; the snapshot keeps %s)%n", FILES * FILE_MB,
                rounds, keeps);
        out.printf("  %-40s %8.1f ms%n", "copying the files in its sandbox", c);
        out.printf("  %-40s %8.1f ms  %5.2fx the copy%n", "snapshot", Figures.median(snapshot),
                Figures.median(snapshot) / c);
        out.printf("  %-40s %8.1f ms  %5.2fx the copy%n", "a session from it, to its first answer",
                Figures.median(made), Figures.median(made) / c);
        if (image != null) {
            commit(out, image, rounds);
        }
        return 0;
    }

    private void commit(PrintWriter out, String image, int rounds) throws Exception {
        double[] fresh = new double[rounds], commit = new double[rounds], inCommitted = new double[rounds];
        long bytes = 0;
        for (int r = 0; r < rounds; r++) {
            long t = System.nanoTime();
            String base = create("{\"language\": \"python\", \"image\": \"" + image + "\"}");
            cell(base, "1");
            fresh[r] = Figures.msSince(t);
            try {
                cell(base, "import os, site\nd = os.path.join(site.getusersitepackages(), 'benchpkg')\n"
                        + "os.makedirs(d, exist_ok=True)\nfor i in range(" + MODULES + "):\n"
                        + "    open(os.path.join(d, 'm%d.py' % i), 'w').write('X = %d\\n' % i + '# pad\\n' * 200)\n"
                        + "open(os.path.join(d, '__init__.py'), 'w').write('from .m7 import X\\n')\n");
                t = System.nanoTime();
                JsonNode done = http.call("POST", "/v1/sessions/" + base + "/commit", "{\"tag\": \"bench/committed:"
                        + r + "\"}");
                commit[r] = Figures.msSince(t);
                bytes = done.path("layer_bytes").asLong();
            } finally {
                http.call("DELETE", "/v1/sessions/" + base, null);
            }
            t = System.nanoTime();
            String child = create("{\"language\": \"python\", \"image\": \"bench/committed:" + r + "\"}");
            String imported = cell(child, "import benchpkg; benchpkg.X");
            inCommitted[r] = Figures.msSince(t);
            http.call("DELETE", "/v1/sessions/" + child, null);
            if (!imported.equals("7")) {
                throw new IOException("a session in the committed image did not import the package: " + imported);
            }
        }
        double f = Figures.median(fresh);
        out.printf("a session in %s that wrote a %d-module package into ~/.local, committed (layer %d bytes)%n", image,
                MODULES, bytes);
        out.printf("  %-40s %8.1f ms%n", "a new session in the base image", f);
        out.printf("  %-40s %8.1f ms  %5.2fx a new session%n", "commit", Figures.median(commit),
                Figures.median(commit) / f);
        out.printf("  %-40s %8.1f ms  %5.2fx a new session%n", "a session in the new image, importing it",
                Figures.median(inCommitted), Figures.median(inCommitted) / f);
        out.println("  (the committed images stay in the store as bench/committed:N: crucible image rm them)");
    }

    private String create(String body) throws Exception {
        return http.call("POST", "/v1/sessions", body).get("id").asString();
    }

    private String cell(String id, String code) throws Exception {
        JsonNode r = http.call("POST", "/v1/sessions/" + id + "/execute", "{\"code\": "
                + CliSupport.json().writeValueAsString(code) + "}");
        if (!r.path("status").asString("").equals("ok")) {
            throw new IOException("a cell failed: " + r);
        }
        return r.path("result").asString("");
    }

}
