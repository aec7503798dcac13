package dev.crucible.cli.serve;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.cli.CrucibleCommand;
import dev.crucible.cli.serve.Manifests.Checked;
import dev.crucible.cli.serve.Manifests.Rendered;
import dev.crucible.server.agentsandbox.AgentSandboxPorts;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import picocli.CommandLine;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.JsonNodeFactory;
import tools.jackson.databind.node.ObjectNode;

/**
 * {@code deploy/agent-sandbox} as {@code kubectl kustomize} renders it, every object valid against the v1beta1 CRDs of
 * kubernetes-sigs/agent-sandbox vendored in {@code deploy/agent-sandbox/crds} (the pod template's fields included),
 * the pod as narrow as the Podman-proven StatefulSet's, and the validator rejecting what the API server would.
 */
class AgentSandboxManifestsTest {
    static final Path DIR = Manifests.REPO.resolve("deploy/agent-sandbox");
    private static Rendered rendered;

    @BeforeAll
    static void render() throws Exception {
        Manifests.requireTools();
        rendered = Manifests.render(DIR);
    }

    static JsonNode pod() {
        return rendered.object("SandboxTemplate", "crucible").at("/spec/podTemplate/spec");
    }

    @Test
    void theTemplateAndItsWarmPoolAreValidV1beta1() {
        assertThat(rendered.invalid()).isEmpty();
        assertThat(rendered.objects().stream().map(c -> c.object().get("apiVersion").asString() + " " + c.kind()))
                .containsExactlyInAnyOrder("extensions.agents.x-k8s.io/v1beta1 SandboxTemplate",
                        "extensions.agents.x-k8s.io/v1beta1 SandboxWarmPool");
        assertThat(rendered.object("SandboxWarmPool", "crucible").at("/spec/sandboxTemplateRef/name").asString())
                .isEqualTo("crucible");
    }

    @Test
    void theClaimExampleIsValidAndNamesTheWarmPool() throws Exception {
        Rendered claim = Manifests.check(Files.readString(DIR.resolve("examples/sandboxclaim.yaml")));
        assertThat(claim.invalid()).isEmpty();
        assertThat(claim.objects()).hasSize(1);
        assertThat(claim.objects().getFirst().object().at("/spec/warmPoolRef/name").asString()).isEqualTo("crucible");
    }

    @Test
    void thePodIsAsNarrowAsThePodmanProvenStatefulSetWithAReadOnlyRoot() throws Exception {
        JsonNode proven = KubernetesManifestsTest.rendered(".").object("StatefulSet", "crucible")
                .at("/spec/template/spec");
        JsonNode pod = pod();
        assertThat(pod.get("hostUsers")).isEqualTo(proven.get("hostUsers"));
        assertThat(pod.get("hostUsers").asBoolean(true)).isFalse();
        assertThat(pod.get("securityContext")).isEqualTo(proven.get("securityContext"));
        assertThat(pod.get("automountServiceAccountToken").asBoolean(true)).isFalse();
        ObjectNode security = (ObjectNode) pod.at("/containers/0/securityContext").deepCopy();
        assertThat(security.remove("readOnlyRootFilesystem").asBoolean()).isTrue();
        assertThat(security).isEqualTo(proven.at("/containers/0/securityContext"));
        assertThat(pod.at("/containers/0/securityContext/privileged").asBoolean(true)).isFalse();
        // the data directory on the sandbox's own volume (the controller adds the claim's volume by its name)
        JsonNode template = rendered.object("SandboxTemplate", "crucible");
        assertThat(template.at("/spec/volumeClaimTemplates/0/metadata/name").asString()).isEqualTo("data");
        assertThat(pod.at("/containers/0/volumeMounts").valueStream()
                .filter(m -> m.get("name").asString().equals("data")).map(m -> m.get("mountPath").asString()))
                .containsExactly("/var/lib/crucible");
    }

    @Test
    void thePodServesAsAnAgentSandboxOnTheContainersPortsWithTheApiOnLoopback() {
        JsonNode c = pod().at("/containers/0");
        assertThat(c.get("command").valueStream().map(JsonNode::asString)).endsWith("/usr/local/bin/crucible");
        String[] args = c.get("args").valueStream().map(JsonNode::asString).toArray(String[]::new);
        ServeCommand serve = (ServeCommand) new CommandLine(new CrucibleCommand()).parseArgs(args).subcommand()
                .commandSpec().userObject();
        assertThat(serve.agentSandbox).isTrue();
        assertThat(serve.agentSandboxHost).isEqualTo("0.0.0.0");
        assertThat(serve.host).as("Crucible's own API takes no token: loopback only").isEqualTo("127.0.0.1");
        AgentSandboxPorts ports = AgentSandboxPorts.parse(serve.agentSandboxPorts);
        assertThat(ports).isEqualTo(AgentSandboxPorts.DEFAULTS);
        assertThat(serve.port).isNotIn(ports.runtime(), ports.rest(), ports.grpc());
        assertThat(c.get("ports").valueStream().map(p -> p.get("name").asString() + " " + p.get("containerPort").asInt()))
                .contains("runtime " + ports.runtime());
        assertThat(c.at("/readinessProbe/httpGet/port").asString()).isEqualTo("runtime");
        assertThat(c.at("/readinessProbe/httpGet/path").asString()).isEqualTo("/");
        assertThat(serve.dataDir).hasToString("/var/lib/crucible");
    }

    static Stream<Arguments> breakages() {
        JsonNodeFactory f = JsonNodeFactory.instance;
        return Stream.of(
                Arguments.of("SandboxTemplate", "/spec/podTemplate/spec/containers/0/securityContext",
                        "readOnlyRootFilesytem", f.booleanNode(true),
                        "/spec/podTemplate/spec/containers/0/securityContext/readOnlyRootFilesytem is not a field of"
                                + " the schema"),
                Arguments.of("SandboxTemplate", "/spec/podTemplate/spec/containers/0/ports/0", "containerPort",
                        f.stringNode("runtime"), "/spec/podTemplate/spec/containers/0/ports/0/containerPort must be"
                                + " integer"),
                Arguments.of("SandboxTemplate", "/spec", "podTemplate", null, "/spec must have required property"
                        + " 'podTemplate'"),
                Arguments.of("SandboxTemplate", "/spec", "envVarsInjectionPolicy", f.stringNode("Sometimes"),
                        "/spec/envVarsInjectionPolicy must be equal to one of the allowed values"),
                Arguments.of("SandboxWarmPool", "/spec/updateStrategy", "type", f.stringNode("Rolling"),
                        "/spec/updateStrategy/type must be equal to one of the allowed values"),
                Arguments.of("SandboxWarmPool", "", "apiVersion", f.stringNode("extensions.agents.x-k8s.io/v1alpha1"),
                        "apiVersion extensions.agents.x-k8s.io/v1alpha1 is deprecated"),
                Arguments.of("SandboxWarmPool", "", "apiVersion", f.stringNode("extensions.agents.x-k8s.io/v2"),
                        "no schema for apiVersion extensions.agents.x-k8s.io/v2 kind SandboxWarmPool"));
    }

    @ParameterizedTest(name = "{0} {1}/{2}")
    @MethodSource("breakages")
    void aBreakageIsRejected(String kind, String at, String field, JsonNode value, String error) throws Exception {
        ObjectNode object = (ObjectNode) rendered.objects().stream().filter(c -> c.kind().equals(kind)).findFirst()
                .orElseThrow().object().deepCopy();
        ObjectNode parent = (ObjectNode) object.at(at);
        if (value == null) {
            parent.remove(field);
        } else {
            parent.set(field, value);
        }
        Checked checked = Manifests.check(Manifests.JSON.writeValueAsString(object)).objects().getFirst();
        assertThat(checked.errors()).anySatisfy(e -> assertThat(e).startsWith(error));
    }

    @Test
    void aClaimWithoutItsWarmPoolIsRejected() throws Exception {
        Checked claim = Manifests.check("""
                apiVersion: extensions.agents.x-k8s.io/v1beta1
                kind: SandboxClaim
                metadata: {name: x}
                spec: {lifecycle: {shutdownPolicy: Keep}}
                """).objects().getFirst();
        assertThat(claim.errors()).containsExactlyInAnyOrder("/spec must have required property 'warmPoolRef'",
                "/spec/lifecycle/shutdownPolicy must be equal to one of the allowed values");
    }
}
