package dev.crucible.image.spec;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/** References read as Docker reads them; what is not a reference is refused with the reason. */
class ImageRefTest {
    @ParameterizedTest(name = "{0}")
    @CsvSource({
        "python:3.12-slim, docker.io, library/python, 3.12-slim, docker.io/library/python:3.12-slim",
        "python, docker.io, library/python, latest, docker.io/library/python:latest",
        "jupyter/scipy-notebook, docker.io, jupyter/scipy-notebook, latest, docker.io/jupyter/scipy-notebook:latest",
        "index.docker.io/library/alpine:3, docker.io, library/alpine, 3, docker.io/library/alpine:3",
        "ghcr.io/org/team/app:v1.2, ghcr.io, org/team/app, v1.2, ghcr.io/org/team/app:v1.2",
        "127.0.0.1:5000/team/img, 127.0.0.1:5000, team/img, latest, 127.0.0.1:5000/team/img:latest",
        "localhost/img:1, localhost, img, 1, localhost/img:1",
        "quay.io/jupyter/scipy-notebook:python-3.11, quay.io, jupyter/scipy-notebook, python-3.11, quay.io/jupyter/scipy-notebook:python-3.11"})
    void aReferenceIsReadAsDockerReadsIt(String text, String registry, String repository, String tag, String canonical)
            throws ImageException {
        ImageRef ref = ImageRef.parse(text);
        assertThat(ref.registry()).isEqualTo(registry);
        assertThat(ref.repository()).isEqualTo(repository);
        assertThat(ref.tag()).isEqualTo(tag);
        assertThat(ref.canonical()).isEqualTo(canonical);
    }

    @Test
    void aDigestNamesTheManifestAndDockerHubIsReachedThroughItsApiHost() throws ImageException {
        String digest = "sha256:" + "ab".repeat(32);
        ImageRef ref = ImageRef.parse("alpine@" + digest);
        assertThat(ref.tag()).isNull();
        assertThat(ref.digest()).isEqualTo(digest);
        assertThat(ref.reference()).isEqualTo(digest);
        assertThat(ref.apiHost()).isEqualTo("registry-1.docker.io");
        assertThat(ImageRef.parse("alpine:3@" + digest).canonical()).isEqualTo("docker.io/library/alpine:3@" + digest);
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"", "UPPER/case", "a b", "img:", "img@sha256:short", "img@md5:abcd", "../escape",
        "registry.io/../x", "img:bad/tag", "-lead", "a//b"})
    void whatIsNotAReferenceIsRefusedWithTheReason(String text) {
        assertThatThrownBy(() -> ImageRef.parse(text)).isInstanceOfSatisfying(ImageException.class, e -> {
            assertThat(e.failure()).isEqualTo(ImageException.Failure.INVALID_REFERENCE);
            assertThat(e.getMessage()).startsWith("invalid image reference");
        });
    }
}
