package dev.crucible.cli.serve;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.cli.serve.Manifests.Checked;
import dev.crucible.cli.serve.Manifests.Rendered;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.JsonNodeFactory;
import tools.jackson.databind.node.ObjectNode;

/**
 * The validator of {@code deploy/validate} rejects what the API server would: a test of the test, so that a green
 * {@link KubernetesManifestsTest} means valid manifests and not a validator that passes anything.
 */
class ManifestValidatorTest {
    private static Rendered valid;

    @BeforeAll
    static void render() throws Exception {
        Manifests.requireTools();
        valid = Manifests.render(Manifests.KUSTOMIZE.resolve("examples/servicemonitor"));
        assertThat(valid.invalid()).isEmpty();
    }

    @Test
    void aBrokenOverlayIsRejectedObjectByObject() throws Exception {
        Rendered broken = Manifests.render(Path.of("src/test/resources/kubernetes/broken").toAbsolutePath());
        assertThat(broken.one("Deployment", "broken").errors()).containsExactlyInAnyOrder(
                "/spec/replicas must be integer",
                "/spec/template/spec/containers/0/readynessProbe is not a field of the schema");
        assertThat(broken.one("StatefulSet", "crucible").errors()).containsExactlyInAnyOrder(
                "/spec/template/spec/containers/0/readinessProbe/periodSeconds must be integer",
                "/spec/template/spec/terminationGracePeriodSecond is not a field of the schema");
        assertThat(broken.invalid()).hasSize(2);
    }

    static Stream<Arguments> breakages() {
        JsonNodeFactory f = JsonNodeFactory.instance;
        return Stream.of(
                Arguments.of("StatefulSet", "/spec/template/spec/containers/0", "imagePullPolicy", f.stringNode("Sometimes"),
                        "/spec/template/spec/containers/0/imagePullPolicy must be equal to one of the allowed values"),
                Arguments.of("StatefulSet", "/spec/template/spec/containers/0/ports/0", "containerPort",
                        f.stringNode("http"), "/spec/template/spec/containers/0/ports/0/containerPort must be integer"),
                Arguments.of("StatefulSet", "/spec", "selector", null, "/spec must have required property selector"),
                Arguments.of("StatefulSet", "/spec/template/spec/containers/0/resources/limits", "cpu",
                        f.booleanNode(true), "/spec/template/spec/containers/0/resources/limits/cpu must be"),
                Arguments.of("Service", "/spec/ports/0", "port", f.stringNode("eighty"), "/spec/ports/0/port must be integer"),
                Arguments.of("NetworkPolicy", "/spec", "podSelecter", f.objectNode(),
                        "/spec/podSelecter is not a field of the schema"),
                Arguments.of("HorizontalPodAutoscaler", "", "apiVersion", f.stringNode("autoscaling/v2beta2"),
                        "apiVersion autoscaling/v2beta2 is not served by Kubernetes 1.33"),
                Arguments.of("PodDisruptionBudget", "", "kind", f.stringNode("PodDisruptionBudgets"),
                        "no schema for apiVersion policy/v1 kind PodDisruptionBudgets"),
                Arguments.of("ServiceMonitor", "/spec/endpoints/0", "intervall", f.stringNode("15s"),
                        "/spec/endpoints/0/intervall is not a field of the schema"),
                Arguments.of("ServiceMonitor", "/spec/endpoints/0/authorization/credentials", "key", f.numberNode(1),
                        "/spec/endpoints/0/authorization/credentials/key must be string"));
    }

    @ParameterizedTest(name = "{0} {1}/{2}")
    @MethodSource("breakages")
    void aBreakageIsRejected(String kind, String at, String field, JsonNode value, String error) throws Exception {
        JsonNode object = valid.objects().stream().filter(c -> c.kind().equals(kind)).findFirst().orElseThrow()
                .object().deepCopy();
        ObjectNode parent = (ObjectNode) object.at(at);
        if (value == null) {
            parent.remove(field);
        } else {
            parent.set(field, value);
        }
        Checked checked = Manifests.check(Manifests.JSON.writeValueAsString(object)).objects().getFirst();
        assertThat(checked.errors()).anySatisfy(e -> assertThat(e).startsWith(error));
    }
}
