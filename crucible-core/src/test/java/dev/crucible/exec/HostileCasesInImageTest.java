package dev.crucible.exec;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.TestHost;
import dev.crucible.image.spec.Image;
import dev.crucible.image.store.TestImages;
import java.io.IOException;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import tools.jackson.databind.JsonNode;

/**
 * The hostile catalogue's Python and shell cases, run in a real image (Debian with Python) instead of on the host's
 * /usr: the same expectations hold, since the image changes the file system and nothing of the sandbox around it.
 */
class HostileCasesInImageTest {
    /** The languages the test image has. */
    private static final Set<String> IN_IMAGE = Set.of("python", "bash");

    static Image image;

    @BeforeAll
    static void commitTheImage() throws Exception {
        image = TestImages.debianPython(TestHost.images());
    }

    /**
     * The catalogue's Python and shell cases; a case whose host expectation speaks of the host's layout (a directory
     * that is absent there and the image's own here) takes its entry of {@code image-expectations.json}, which says why.
     */
    static Stream<Arguments> cases() throws IOException {
        JsonNode overrides = HostileCasesTest.resource("image-expectations.json");
        return HostileCasesTest.cases().filter(a -> IN_IMAGE.contains(((JsonNode) a.get()[1]).get("language").asString()))
                .map(a -> overrides.has((String) a.get()[0])
                        ? Arguments.of(a.get()[0], a.get()[1], overrides.get((String) a.get()[0])) : a);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void hostileCaseInAnImageGetsItsExpectedOutcome(String id, JsonNode c, JsonNode expect) throws Exception {
        ExecuteResult result = HostileCasesTest.runAndCheck(id, " (in image)", c, expect,
                request -> request.withImage(image.digest()));
        assertThat(result.imageDigest()).as(id).isEqualTo(image.digest());
        TestHost.assertNothingLeft();
        assertThat(List.of(image.rootfs().toFile().list())).as("the image root is unchanged")
                .doesNotContain("pwned", "planted");
    }
}
