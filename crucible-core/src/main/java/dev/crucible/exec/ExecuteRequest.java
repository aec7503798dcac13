package dev.crucible.exec;

import com.fasterxml.jackson.annotation.JsonProperty;
import dev.crucible.egress.NetworkRequest;
import dev.crucible.error.ErrorCode;
import dev.crucible.error.RequestException;
import dev.crucible.runtime.LimitsSpec;
import dev.crucible.sandbox.Isolation;
import java.util.List;

/**
 * The body of {@code POST /v1/execute} and the input of {@code crucible run}. Null fields are absent.
 *
 * @param language a runtime's language or alias
 * @param code the program's source
 * @param stdin standard input, or null for none
 * @param args arguments after the run command, or null
 * @param files extra workspace files, or null
 * @param limits limit overrides, or null for the runtime's defaults
 * @param image an image of the store to run in instead of the runtime's own file system, or null
 * @param network egress the program asks for, within the operator's list; null for none (the default)
 * @param isolation the wall it asks for ({@code namespaces}, {@code gvisor}): at least its runtime's, never weaker;
 *     null for the runtime's own
 */
public record ExecuteRequest(
        @JsonProperty("language") String language,
        @JsonProperty("code") String code,
        @JsonProperty("stdin") String stdin,
        @JsonProperty("args") List<String> args,
        @JsonProperty("files") List<FileInput> files,
        @JsonProperty("limits") LimitsSpec limits,
        @JsonProperty("image") String image,
        @JsonProperty("network") NetworkRequest network,
        @JsonProperty("isolation") Isolation isolation) {

    /** A request behind its runtime's own tier. */
    public ExecuteRequest(String language, String code, String stdin, List<String> args, List<FileInput> files,
            LimitsSpec limits, String image, NetworkRequest network) {
        this(language, code, stdin, args, files, limits, image, network, null);
    }

    /** A request without network. */
    public ExecuteRequest(String language, String code, String stdin, List<String> args, List<FileInput> files,
            LimitsSpec limits, String image) {
        this(language, code, stdin, args, files, limits, image, null);
    }

    /** A request on the runtime's own file system. */
    public ExecuteRequest(String language, String code, String stdin, List<String> args, List<FileInput> files,
            LimitsSpec limits) {
        this(language, code, stdin, args, files, limits, null);
    }

    /** A request for {@code code} in {@code language} with nothing else. */
    public static ExecuteRequest of(String language, String code) {
        return new ExecuteRequest(language, code, null, null, null, null, null);
    }

    /** This request with {@code input} as stdin. */
    public ExecuteRequest withStdin(String input) {
        return new ExecuteRequest(language, code, input, args, files, limits, image, network, isolation);
    }

    /** This request run in {@code reference} (an image of the store), or on the runtime's own file system (null). */
    public ExecuteRequest withImage(String reference) {
        return new ExecuteRequest(language, code, stdin, args, files, limits, reference, network, isolation);
    }

    /** This request with limit overrides. */
    public ExecuteRequest withLimits(LimitsSpec overrides) {
        return new ExecuteRequest(language, code, stdin, args, files, overrides, image, network, isolation);
    }

    /** This request behind {@code tier}, or its runtime's own (null). */
    public ExecuteRequest withIsolation(Isolation tier) {
        return new ExecuteRequest(language, code, stdin, args, files, limits, image, network, tier);
    }

    /**
     * This request behind the tier named {@code tier} ({@code "gvisor"}, any case, as the CLI takes it), or its
     * runtime's own (null).
     *
     * @throws RequestException {@code invalid_request} naming the tiers, for a name that is none of them
     */
    public ExecuteRequest withIsolation(String tier) {
        try {
            return withIsolation(tier == null ? null : Isolation.parse(tier));
        } catch (IllegalArgumentException e) {
            throw new RequestException(ErrorCode.INVALID_REQUEST, e.getMessage());
        }
    }

    /** This request with egress to {@code allow} (within the operator's list). */
    public ExecuteRequest withNetwork(NetworkRequest asked) {
        return new ExecuteRequest(language, code, stdin, args, files, limits, image, asked, isolation);
    }
}
