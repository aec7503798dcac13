package dev.crucible.runtime;

import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.List;
import java.util.Map;

/** One {@code [[runtime]]} table of a runtimes TOML file, as written. Null means "not given". */
record RuntimeDefinition(
        @JsonProperty("language") String language,
        @JsonProperty("aliases") List<String> aliases,
        @JsonProperty("extensions") List<String> extensions,
        @JsonProperty("version") String version,
        @JsonProperty("version_command") List<String> versionCommand,
        @JsonProperty("file_name") String fileName,
        @JsonProperty("compile_command") List<String> compileCommand,
        @JsonProperty("run_command") List<String> runCommand,
        @JsonProperty("env") Map<String, String> env,
        @JsonProperty("limits") LimitsSpec limits,
        @JsonProperty("compile_limits") LimitsSpec compileLimits,
        @JsonProperty("rootfs") String rootfs,
        @JsonProperty("image") String image,
        @JsonProperty("binds") List<String> binds,
        @JsonProperty("pool_command") List<String> poolCommand,
        @JsonProperty("session_command") List<String> sessionCommand,
        @JsonProperty("egress_allow") List<String> egressAllow) {

    record File(@JsonProperty("runtime") List<RuntimeDefinition> runtime) {}
}
