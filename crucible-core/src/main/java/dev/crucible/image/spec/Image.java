package dev.crucible.image.spec;

import com.fasterxml.jackson.annotation.JsonProperty;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;

/**
 * One image in the store: what {@code crucible image inspect} shows and what a sandbox needs to run in it.
 *
 * @param name the canonical reference it was pulled or imported as, e.g. {@code docker.io/library/python:3.12-slim}
 * @param digest the manifest's digest ({@code sha256:…}): what results carry as {@code image_digest}
 * @param id the config's digest: images with the same id share one unpacked root
 * @param rootfs the unpacked root directory (read-only to sandboxes), complete once the image is visible
 * @param env the image config's {@code Env} ({@code KEY=VALUE})
 * @param workingDir the config's {@code WorkingDir}, or null
 * @param entrypoint the config's {@code Entrypoint}, or empty
 * @param cmd the config's {@code Cmd}, or empty
 * @param platform {@code os/architecture[/variant]}
 * @param size the bytes of its layers as stored (compressed)
 * @param created when it entered this store
 * @param layers the layer digests, lowest first
 */
public record Image(
        @JsonProperty("name") String name,
        @JsonProperty("digest") String digest,
        @JsonProperty("id") String id,
        @JsonProperty("rootfs") Path rootfs,
        @JsonProperty("env") List<String> env,
        @JsonProperty("working_dir") String workingDir,
        @JsonProperty("entrypoint") List<String> entrypoint,
        @JsonProperty("cmd") List<String> cmd,
        @JsonProperty("platform") String platform,
        @JsonProperty("size") long size,
        @JsonProperty("created") Instant created,
        @JsonProperty("layers") List<String> layers) {}
