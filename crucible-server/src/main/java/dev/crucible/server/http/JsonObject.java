package dev.crucible.server.http;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * A small JSON object of an answer, its fields in the order written: {@code Map.of}'s iteration order changes from one
 * JVM to the next (its salt is random), so an answer built with it printed its fields in another order after a restart.
 */
public final class JsonObject {
    private JsonObject() {}

    /** {@code names and values} alternately, as {@code Map.of} takes them (no null name; a value may be null). */
    public static Map<String, Object> of(Object... namesAndValues) {
        if (namesAndValues.length % 2 != 0) {
            throw new IllegalArgumentException("names and values come in pairs");
        }
        Map<String, Object> object = new LinkedHashMap<>();
        for (int i = 0; i < namesAndValues.length; i += 2) {
            String name = (String) Objects.requireNonNull(namesAndValues[i], "a field's name");
            if (object.containsKey(name)) {
                throw new IllegalArgumentException("a field twice: " + name);
            }
            object.put(name, namesAndValues[i + 1]);
        }
        return Collections.unmodifiableMap(object);
    }
}
