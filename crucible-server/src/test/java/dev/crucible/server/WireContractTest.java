package dev.crucible.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.annotation.JsonProperty;
import java.io.IOException;
import java.lang.reflect.RecordComponent;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The server's answer records are the wire contract (issue 51 item 2): every field each one writes is a field of the
 * TypeScript SDK's interface of the same answer and of the Java client's record, so a field the server adds and an
 * SDK misses fails here, not in a user's hands. The server's names are its records' {@code @JsonProperty} names; the
 * Java client's, its records' components in snake_case (its mapper's naming); TypeScript's, the interface's fields in
 * {@code clients/typescript/src/types.ts} (those of the interface it extends included).
 */
class WireContractTest {
    private static final Path TYPES = Path.of("..", "clients", "typescript", "src", "types.ts");

    /** One answer: the server's record, the TypeScript interface, the Java client's record. */
    private record Answer(Class<?> server, String typescript, Class<?> java) {}

    private static final List<Answer> ANSWERS = List.of(
            new Answer(dev.crucible.session.spec.SessionInfo.class, "SessionInfo", dev.crucible.client.SessionInfo.class),
            new Answer(dev.crucible.exec.ExecuteResult.class, "ExecuteResult", dev.crucible.client.ExecuteResult.class),
            new Answer(dev.crucible.session.spec.CellResult.class, "CellResult", dev.crucible.client.CellResult.class),
            new Answer(dev.crucible.session.process.ProcessInfo.class, "ProcessInfo",
                    dev.crucible.client.ProcessInfo.class),
            new Answer(dev.crucible.session.process.CommandResult.class, "CommandResult",
                    dev.crucible.client.CommandResult.class),
            new Answer(dev.crucible.server.http.RuntimeInfo.class, "RuntimeInfo", dev.crucible.client.RuntimeInfo.class));

    /** The names a record writes: each component's {@code @JsonProperty}, else its name. */
    static Set<String> serverFields(Class<?> record) {
        Set<String> names = new TreeSet<>();
        for (RecordComponent c : record.getRecordComponents()) {
            JsonProperty p = c.getAccessor().getAnnotation(JsonProperty.class);
            if (p == null) {
                p = c.getAnnotation(JsonProperty.class);
            }
            names.add(p != null && !p.value().isEmpty() ? p.value() : c.getName());
        }
        return names;
    }

    /** The Java client's names: its record's components in snake_case. */
    static Set<String> javaFields(Class<?> record) {
        Set<String> names = new TreeSet<>();
        for (RecordComponent c : record.getRecordComponents()) {
            names.add(c.getName().replaceAll("([a-z0-9])([A-Z])", "$1_$2").toLowerCase(java.util.Locale.ROOT));
        }
        return names;
    }

    /** The fields of every exported interface in types.ts, those it extends included. */
    static Map<String, Set<String>> typescriptInterfaces() throws IOException {
        String source = Files.readString(TYPES);
        Matcher m = Pattern.compile("export interface (\\w+)(?: extends (\\w+))? \\{(.*?)\\n}", Pattern.DOTALL)
                .matcher(source);
        Map<String, Set<String>> own = new java.util.HashMap<>();
        Map<String, String> parents = new java.util.HashMap<>();
        while (m.find()) {
            Set<String> fields = new LinkedHashSet<>();
            Matcher f = Pattern.compile("(?m)^  (\\w+)\\??:").matcher(m.group(3));
            while (f.find()) {
                fields.add(f.group(1));
            }
            own.put(m.group(1), fields);
            if (m.group(2) != null) {
                parents.put(m.group(1), m.group(2));
            }
        }
        Map<String, Set<String>> all = new java.util.HashMap<>();
        for (String name : own.keySet()) {
            Set<String> fields = new TreeSet<>();
            for (String at = name; at != null; at = parents.get(at)) {
                fields.addAll(own.getOrDefault(at, Set.of()));
            }
            all.put(name, fields);
        }
        return all;
    }

    @Test
    void everyFieldTheServerWritesIsInTheTypeScriptAndJavaSdks() throws IOException {
        Map<String, Set<String>> ts = typescriptInterfaces();
        List<String> missing = new ArrayList<>();
        for (Answer a : ANSWERS) {
            Set<String> server = serverFields(a.server());
            assertThat(ts).as("types.ts has interface " + a.typescript()).containsKey(a.typescript());
            Set<String> inTs = new TreeSet<>(server);
            inTs.removeAll(ts.get(a.typescript()));
            Set<String> inJava = new TreeSet<>(server);
            inJava.removeAll(javaFields(a.java()));
            if (!inTs.isEmpty()) {
                missing.add("TypeScript " + a.typescript() + " lacks " + inTs);
            }
            if (!inJava.isEmpty()) {
                missing.add("Java client " + a.java().getSimpleName() + " lacks " + inJava);
            }
        }
        assertThat(missing).as("fields the server writes that an SDK does not read").isEmpty();
    }

    @Test
    void theCheckReadsEachSideForReal() throws IOException {
        assertThat(serverFields(dev.crucible.session.spec.SessionInfo.class)).contains("idle_timeout_s", "isolation");
        assertThat(javaFields(dev.crucible.client.SessionInfo.class)).contains("idle_timeout_s", "created_at");
        assertThat(typescriptInterfaces().get("ExecuteResult")).as("with the fields of Ended, which it extends")
                .contains("stdout", "exit_code");
    }
}
