package dev.crucible.cli.bench;

import java.io.IOException;
import java.io.PrintWriter;
import tools.jackson.databind.JsonNode;

/**
 * {@code crucible bench --sessions --pause MB}: pausing and resuming a live Python session over HTTP (issue 30) whose
 * interpreter holds MB of random bytes, against making a new session and running its first cell in the same run;
 * each resume is checked to have brought the bytes back. What a pause keeps is the server's to say: {@code memory}
 * behind gVisor, else {@code replay} or {@code files} (then the bytes are made again by the replay, or not at all).
 */
final class PauseBench {
    private final SessionBench http;

    PauseBench(SessionBench http) {
        this.http = http;
    }

    int run(PrintWriter out, int megabytes, int rounds) throws Exception {
        String id = http.call("POST", "/v1/sessions", "{\"language\": \"python\", \"restore\": \"replay\"}").get("id")
                .asString();
        double[] pause = new double[rounds], resume = new double[rounds], fresh = new double[rounds];
        String keeps = null;
        double fork;
        double forkAnswer;
        String restored = null;
        try {
            http.call("POST", "/v1/sessions/" + id + "/execute", "{\"code\": \"import os; x = os.urandom(" + megabytes
                    + " * 1024 * 1024); len(x)\"}");
            for (int r = 0; r < rounds; r++) {
                long t = System.nanoTime();
                String other = http.call("POST", "/v1/sessions", "{\"language\": \"python\"}").get("id").asString();
                http.call("POST", "/v1/sessions/" + other + "/execute", "{\"code\": \"1\"}");
                fresh[r] = Figures.msSince(t);
                http.call("DELETE", "/v1/sessions/" + other, null);

                t = System.nanoTime();
                keeps = http.call("POST", "/v1/sessions/" + id + "/pause", "{}").path("keeps").asString("");
                pause[r] = Figures.msSince(t);
                t = System.nanoTime();
                restored = http.call("POST", "/v1/sessions/" + id + "/resume", "{}").path("restored").asString("");
                JsonNode n = http.call("POST", "/v1/sessions/" + id + "/execute", "{\"code\": \"len(x)\"}");
                resume[r] = Figures.msSince(t); // to its first answer: a restore behind gVisor goes on after the resume answers
                if (!n.path("result").asString("").equals(Long.toString(megabytes * 1024L * 1024))) {
                    throw new IOException("the resumed session lost its bytes: " + n);
                }
            }
            long t = System.nanoTime(); // the fork into 8: the parent paused, eight copies made
            JsonNode forked = http.call("POST", "/v1/sessions/" + id + "/fork", "{\"count\": 8}");
            fork = Figures.msSince(t);
            t = System.nanoTime();
            JsonNode first = http.call("POST", "/v1/sessions/" + forked.get("forks").get(0).get("id").asString()
                    + "/execute", "{\"code\": \"len(x)\"}");
            forkAnswer = Figures.msSince(t);
            if (!first.path("result").asString("").equals(Long.toString(megabytes * 1024L * 1024))) {
                throw new IOException("a fork lost the bytes: " + first);
            }
            for (JsonNode one : forked.get("forks")) {
                http.call("DELETE", "/v1/sessions/" + one.get("id").asString(), null);
            }
        } finally {
            http.call("DELETE", "/v1/sessions/" + id, null);
        }
        double f = Figures.median(fresh);
        out.printf("crucible bench --sessions --pause %d: a Python session holding %d MiB of random bytes, %d rounds,"
                + " medians (the pause keeps %s; the resume restored %s)%n", megabytes, megabytes, rounds, keeps,
                restored);
        out.printf("  %-40s %8.1f ms%n", "a new session and its first cell", f);
        out.printf("  %-40s %8.1f ms  %5.2fx a new session (goal <= 1000 ms)%n", "pause", Figures.median(pause),
                Figures.median(pause) / f);
        out.printf("  %-40s %8.1f ms  %5.2fx a new session (goal <= 1000 ms)%n", "resume, to its first answer",
                Figures.median(resume), Figures.median(resume) / f);
        out.printf("  %-40s %8.1f ms  %5.2fx a new session (goal <= 2000 ms); a fork's first answer %.1f ms%n",
                "fork into 8", fork, fork / f, forkAnswer);
        return 0;
    }
}
