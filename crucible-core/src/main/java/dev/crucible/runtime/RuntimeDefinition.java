package dev.crucible.runtime;

import com.fasterxml.jackson.annotation.JsonProperty;
import dev.crucible.egress.policy.EgressPolicy;
import dev.crucible.sandbox.Isolation;
import dev.crucible.sandbox.Limits;
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
        @JsonProperty("egress_allow") List<String> egressAllow,
        @JsonProperty("isolation") String isolation) {

    record File(@JsonProperty("runtime") List<RuntimeDefinition> runtime) {}

    /**
     * The limits of a run: this definition's overrides over {@link Limits#DEFAULT}.
     *
     * @throws IllegalArgumentException naming the first value out of range
     */
    Limits runLimits() {
        return limits == null ? Limits.DEFAULT : limits.applyTo(Limits.DEFAULT);
    }

    /**
     * The limits of the compile step: this definition's overrides over 30 s of wall time and of CPU, 512 MiB, 1 MiB of
     * output, 64 tasks.
     *
     * @throws IllegalArgumentException naming the first value out of range
     */
    Limits compileStepLimits() {
        Limits compileBase = new Limits(30_000, 30_000, 512, 1024 * 1024, 64);
        return compileLimits == null ? compileBase : compileLimits.applyTo(compileBase);
    }

    /** This definition behind {@code tier} when it names no tier of its own. */
    RuntimeDefinition withDefaultIsolation(Isolation tier) {
        return isolation != null || tier == null ? this : new RuntimeDefinition(language, aliases, extensions, version,
                versionCommand, fileName, compileCommand, runCommand, env, limits, compileLimits, rootfs, image, binds,
                poolCommand, sessionCommand, egressAllow, tier.wire());
    }

    /**
     * This definition's own tier ({@code isolation = "gvisor"}), or null when it names none.
     *
     * @throws IllegalArgumentException naming the tiers there are
     */
    Isolation tier() {
        return isolation == null ? null : Isolation.parse(isolation);
    }

    /**
     * This definition's own egress list ({@code egress_allow}), none when it has none.
     *
     * @throws IllegalArgumentException naming a bad entry
     */
    EgressPolicy egress() {
        return egressAllow == null ? EgressPolicy.none() : EgressPolicy.parse(egressAllow);
    }
}
