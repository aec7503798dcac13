package dev.crucible.server.e2b;

import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import java.util.Map;
import tools.jackson.databind.json.JsonMapper;

/**
 * Variables in a session's interpreter, as cells of its own language: E2B's {@code envVars} of a sandbox (set once,
 * when it is made) and {@code env_vars} of one execution (set before it, put back after it). {@code os.environ} in
 * Python and {@code process.env} in JavaScript, so that what the code starts inherits them too. The values travel as a
 * JSON literal, never spliced into code.
 */
final class Environment {
    private static final JsonMapper JSON = JsonMapper.builder().build();

    private Environment() {}

    /** A cell that sets {@code env}, keeping the values it replaces for {@link #restore}. */
    static String set(String language, Map<String, String> env) {
        String literal = JSON.writeValueAsString(JSON.writeValueAsString(env)); // a string literal of the JSON
        return language.equals("javascript")
                ? "globalThis.__crucibleEnv = (() => { const v = JSON.parse(" + literal + "); const kept = {};"
                        + " for (const k of Object.keys(v)) { kept[k] = process.env[k]; process.env[k] = v[k]; }"
                        + " return kept; })(); undefined"
                : "import os as _crucible_os, json as _crucible_json\n"
                        + "_crucible_env = {k: _crucible_os.environ.get(k) for k in _crucible_json.loads(" + literal + ")}\n"
                        + "_crucible_os.environ.update(_crucible_json.loads(" + literal + "))\n"
                        + "del _crucible_os, _crucible_json";
    }

    /** A cell that sets {@code env} for the rest of the interpreter's life (in Bash, exported). */
    static String setForGood(String language, Map<String, String> env) {
        if (language.equals("bash")) {
            StringBuilder cell = new StringBuilder();
            for (Map.Entry<String, String> e : env.entrySet()) {
                if (!e.getKey().matches("[A-Za-z_][A-Za-z0-9_]*")) {
                    throw new RequestException(ErrorCode.INVALID_REQUEST,
                            "envVars name " + e.getKey().replaceAll("\\p{Cntrl}", "?") + " is not a shell variable's");
                }
                cell.append("export ").append(e.getKey()).append("='").append(e.getValue().replace("'", "'\\''"))
                        .append("'\n");
            }
            return cell.toString();
        }
        return set(language, env) + (language.equals("javascript") ? "; delete globalThis.__crucibleEnv; undefined"
                : "\ndel _crucible_env");
    }

    /** Whether {@link #set} and {@link #restore} speak {@code language} (Bash keeps no per-cell variables). */
    static boolean perCell(String language) {
        return language.equals("python") || language.equals("javascript");
    }

    /** A cell that puts back what {@link #set} replaced. */
    static String restore(String language) {
        return language.equals("javascript")
                ? "for (const [k, v] of Object.entries(globalThis.__crucibleEnv || {})) { if (v === undefined)"
                        + " delete process.env[k]; else process.env[k] = v; } delete globalThis.__crucibleEnv; undefined"
                : "import os as _crucible_os\n"
                        + "_k = _v = None\n"
                        + "for _k, _v in _crucible_env.items():\n"
                        + "    _crucible_os.environ.pop(_k, None) if _v is None else _crucible_os.environ.__setitem__(_k, _v)\n"
                        + "del _crucible_os, _crucible_env, _k, _v";
    }
}
