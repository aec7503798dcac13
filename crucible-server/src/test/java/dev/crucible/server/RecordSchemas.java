package dev.crucible.server;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.lang.reflect.AnnotatedElement;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.RecordComponent;
import java.lang.reflect.Type;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * One record against one OpenAPI schema, both ways (issue 51 item 2): every component the record reads or writes is a
 * property of the schema with a compatible type, every property of the schema is a component, an enum's wire names
 * are the schema's {@code enum}, and, for an answer, the schema's {@code required} list holds every field the server
 * always writes (a primitive, or a component no {@code @JsonInclude(NON_NULL)} may leave out; a field that may be left
 * out is required only where the document says it never is). A record nested
 * in another (by {@code $ref} or inline) is compared the same way, so a {@code $ref}'d schema is checked against every
 * record that is written or read as it.
 */
final class RecordSchemas {
    private static final JsonMapper JSON = JsonMapper.builder().build();
    private final JsonNode openapi;
    private final JsonNode schemas;
    private final Set<String> visited = new HashSet<>();
    private final Set<String> named = new TreeSet<>();
    private final Set<String> requests = new TreeSet<>();
    private final List<String> problems = new ArrayList<>();
    private final boolean snakeCase;

    /** The server's records: a component's wire name is its {@code @JsonProperty}. */
    RecordSchemas(JsonNode openapi) {
        this(openapi, false);
    }

    /**
     * {@code snakeCase}: a client's records, whose components are named in camelCase and written in snake_case by
     * its mapper (the Java client's).
     */
    RecordSchemas(JsonNode openapi, boolean snakeCase) {
        this.snakeCase = snakeCase;
        this.openapi = openapi;
        this.schemas = openapi.path("components").path("schemas");
    }

    /**
     * The schemas a request reads as well as an answer writes (compared for requests first): their {@code required}
     * may be less than what the answer always writes, as a request may leave those fields out.
     */
    Set<String> requestSchemas() {
        return requests;
    }

    /**
     * What differs between {@code record} and the schema {@code name}: a component schema's name, or a JSON pointer
     * into the document (an operation's inline body); empty when they agree.
     */
    List<String> compare(Class<?> record, String name, boolean answer) {
        problems.clear();
        visited.clear();
        named.clear();
        JsonNode schema = name.startsWith("/") ? openapi.at(name) : schemas.path(name);
        if (!schema.isObject()) {
            return List.of("openapi.json has no schema " + name + " (for " + record.getName() + ")");
        }
        named.add(name);
        object(name, record, deref(schema), answer);
        if (!answer) {
            requests.addAll(named);
        }
        return List.copyOf(problems);
    }

    /** The wire name of each component, in order: its {@code @JsonProperty}, else its name (in snake_case). */
    Map<String, RecordComponent> fields(Class<?> record) {
        Map<String, RecordComponent> fields = new LinkedHashMap<>();
        for (RecordComponent c : record.getRecordComponents()) {
            JsonProperty p = c.getAccessor().getAnnotation(JsonProperty.class);
            if (p == null) {
                p = c.getAnnotation(JsonProperty.class);
            }
            String name = snakeCase ? c.getName().replaceAll("([a-z0-9])([A-Z])", "$1_$2").toLowerCase(Locale.ROOT)
                    : c.getName();
            fields.put(p != null && !p.value().isEmpty() ? p.value() : name, c);
        }
        return fields;
    }

    private JsonNode deref(JsonNode s) {
        if (s.has("$ref")) {
            return schemas.path(s.get("$ref").asString().substring("#/components/schemas/".length()));
        }
        if (s.has("allOf") && s.get("allOf").size() == 1) {
            return deref(s.get("allOf").get(0));
        }
        return s;
    }

    private void object(String at, Class<?> record, JsonNode schema, boolean answer) {
        String key = record.getName() + "@" + at;
        if (!visited.add(key)) {
            return;
        }
        Map<String, RecordComponent> fields = fields(record);
        JsonNode properties = schema.path("properties");
        for (Map.Entry<String, RecordComponent> f : fields.entrySet()) {
            if (!properties.has(f.getKey())) {
                problems.add(at + " lacks property " + f.getKey() + " (" + record.getSimpleName() + "."
                        + f.getValue().getName() + "): add it to openapi.json");
            } else {
                type(at + "." + f.getKey(), f.getValue().getGenericType(), properties.get(f.getKey()), answer);
            }
        }
        Set<String> extra = new TreeSet<>(properties.propertyNames());
        extra.removeAll(fields.keySet());
        if (!extra.isEmpty()) {
            problems.add(at + " has properties " + extra + " that " + record.getName() + " does not have");
        }
        if (answer) {
            Set<String> required = new TreeSet<>();
            schema.path("required").forEach(r -> required.add(r.asString()));
            Set<String> always = new TreeSet<>();
            fields.forEach((name, c) -> {
                if (c.getType().isPrimitive() || !(nonNull(record) || nonNull(c) || nonNull(c.getAccessor()))) {
                    always.add(name);
                }
            });
            for (String name : required) {
                if (fields.containsKey(name) && !always.contains(name) && nullable(properties.path(name))) {
                    problems.add(at + "." + name + " is required and may be null, but " + record.getSimpleName()
                            + " leaves a null out (@JsonInclude(NON_NULL)): take it out of \"required\"");
                }
            }
            always.removeAll(required);
            Set<String> unknown = new TreeSet<>(required);
            unknown.removeAll(fields.keySet());
            if (!always.isEmpty() && !requests.contains(at)) {
                problems.add(at + " leaves " + always + " out of \"required\", but " + record.getSimpleName()
                        + " always writes them (no @JsonInclude(NON_NULL) leaves them out): add them to openapi.json");
            }
            if (!unknown.isEmpty()) {
                problems.add(at + " requires " + unknown + ", which " + record.getSimpleName() + " does not have");
            }
        }
    }

    /** Whether a property's schema allows null. */
    private static boolean nullable(JsonNode s) {
        boolean alternative = false;
        for (String union : List.of("oneOf", "anyOf")) {
            for (JsonNode a : s.path(union)) {
                alternative |= "null".equals(a.path("type").asString(""));
            }
        }
        JsonNode type = s.path("type");
        return alternative || s.path("nullable").asBoolean(false) || type.isArray() && type.toString().contains(
                "\"null\"");
    }

    private static boolean nonNull(AnnotatedElement e) {
        JsonInclude include = e.getAnnotation(JsonInclude.class);
        return include != null && include.value() != JsonInclude.Include.ALWAYS
                && include.value() != JsonInclude.Include.USE_DEFAULTS;
    }

    private void type(String at, Type type, JsonNode given, boolean answer) {
        Class<?> raw = type instanceof ParameterizedType p ? (Class<?>) p.getRawType() : (Class<?>) type;
        if (raw == Object.class || JsonNode.class.isAssignableFrom(raw)) {
            return; // any JSON
        }
        JsonNode s = given;
        boolean nullable = false;
        for (String union : List.of("oneOf", "anyOf")) {
            if (s.has(union)) {
                List<JsonNode> rest = new ArrayList<>();
                for (JsonNode alternative : s.get(union)) {
                    if ("null".equals(alternative.path("type").asString(""))) {
                        nullable = true;
                    } else {
                        rest.add(alternative);
                    }
                }
                if (rest.size() != 1) {
                    problems.add(at + ": a " + union + " of more than one non-null schema cannot be checked");
                    return;
                }
                s = rest.get(0);
            }
        }
        if (s.isObject() && !s.has("type") && !s.has("$ref") && !s.has("allOf") && !s.has("enum")) {
            return; // {}: any JSON, whatever a record reads it as
        }
        Set<String> types = new TreeSet<>();
        JsonNode t = s.has("$ref") || s.has("allOf") ? deref(s).path("type") : s.path("type");
        if (t.isArray()) {
            t.forEach(x -> types.add(x.asString()));
        } else if (t.isString()) {
            types.add(t.asString());
        }
        nullable |= types.remove("null") || s.path("nullable").asBoolean(false);
        if (nullable && raw.isPrimitive()) {
            problems.add(at + " is nullable but " + raw + " never is");
        }
        String expected = expected(raw);
        if (!types.equals(Set.of(expected))) {
            problems.add(at + " is " + (types.isEmpty() ? "untyped" : types) + " in openapi.json but a " + type
                    .getTypeName() + " (\"" + expected + "\") in its record");
            return;
        }
        if (raw.isEnum()) {
            Set<String> wire = new TreeSet<>();
            for (Object constant : raw.getEnumConstants()) {
                wire.add(JSON.writeValueAsString(constant).replace("\"", ""));
            }
            Set<String> listed = new TreeSet<>();
            s.path("enum").forEach(e -> listed.add(e.asString()));
            if (!wire.equals(listed)) {
                problems.add(at + " lists enum " + listed + " but " + raw.getSimpleName() + " has " + wire);
            }
        } else if (Collection.class.isAssignableFrom(raw) || raw.isArray()) {
            Type item = raw.isArray() ? raw.getComponentType() : ((ParameterizedType) type).getActualTypeArguments()[0];
            type(at + "[]", item, s.path("items"), answer);
        } else if (Map.class.isAssignableFrom(raw)) {
            JsonNode values = s.path("additionalProperties");
            if (values.isObject()) {
                type(at + "{}", ((ParameterizedType) type).getActualTypeArguments()[1], values, answer);
            }
        } else if (raw.isRecord()) {
            String name = s.has("$ref") || s.has("allOf") ? schemaName(s) : at;
            named.add(name);
            object(name, raw, deref(s), answer);
        }
    }

    private static String schemaName(JsonNode s) {
        JsonNode ref = s.has("$ref") ? s.get("$ref") : s.get("allOf").get(0).path("$ref");
        return ref.asString().substring(ref.asString().lastIndexOf('/') + 1);
    }

    /** The JSON Schema type a Java type is written as. */
    private static String expected(Class<?> raw) {
        if (raw == String.class || raw.isEnum() || raw == Instant.class) {
            return "string";
        }
        if (raw == int.class || raw == long.class || raw == Integer.class || raw == Long.class || raw == short.class) {
            return "integer";
        }
        if (raw == double.class || raw == Double.class || raw == float.class || raw == Float.class) {
            return "number";
        }
        if (raw == boolean.class || raw == Boolean.class) {
            return "boolean";
        }
        if (Collection.class.isAssignableFrom(raw) || raw.isArray()) {
            return "array";
        }
        return "object"; // a record or a map
    }
}
