package dev.crucible.cli.serve;

import static org.assertj.core.api.Assertions.assertThat;

import dev.crucible.cli.CrucibleCommand;
import dev.crucible.cli.PodmanContainer;
import dev.crucible.cli.serve.Manifests.Rendered;
import dev.crucible.server.ServerConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import picocli.CommandLine;
import tools.jackson.databind.JsonNode;

/**
 * {@code deploy/kubernetes} as {@code kubectl kustomize} renders it: every object of the base and of every example
 * overlay valid against the pinned Kubernetes OpenAPI schema, and what the server relies on there.
 */
class KubernetesManifestsTest {
    /** The server's wait after its drain for killed runs to answer (CrucibleServer.KILL_WAIT). */
    static final long KILL_WAIT_S = 5;

    private static final Map<Path, Rendered> RENDERED = new HashMap<>();

    @BeforeAll
    static void tools() throws Exception {
        Manifests.requireTools();
    }

    static synchronized Rendered rendered(String dir) throws Exception {
        Path path = Manifests.KUSTOMIZE.resolve(dir);
        Rendered r = RENDERED.get(path);
        if (r == null) {
            r = Manifests.render(path);
            RENDERED.put(path, r);
        }
        return r;
    }

    static JsonNode container(Rendered r) {
        return r.object("StatefulSet", "crucible").at("/spec/template/spec/containers/0");
    }

    static Stream<String> examples() throws Exception {
        try (Stream<Path> dirs = Files.list(Manifests.KUSTOMIZE.resolve("examples"))) {
            return dirs.map(d -> "examples/" + d.getFileName()).sorted().toList().stream();
        }
    }

    @Test
    void theBaseIsTheServerItsServicesAndItsGuardsAllValid() throws Exception {
        Rendered base = rendered(".");
        assertThat(base.invalid()).isEmpty();
        assertThat(base.objects().stream().map(c -> c.object().get("apiVersion").asString() + " " + c.kind() + " "
                + c.name())).containsExactlyInAnyOrder("v1 Service crucible", "v1 Service crucible-headless",
                "apps/v1 StatefulSet crucible", "policy/v1 PodDisruptionBudget crucible",
                "autoscaling/v2 HorizontalPodAutoscaler crucible", "networking.k8s.io/v1 NetworkPolicy crucible");
    }

    @ParameterizedTest
    @MethodSource("examples")
    void everyExampleOverlayRendersValid(String example) throws Exception {
        Rendered r = rendered(example);
        assertThat(r.invalid()).isEmpty();
        assertThat(r.objects().stream().map(c -> c.kind() + " " + c.name())).as("an overlay adds to the base")
                .containsAll(rendered(".").objects().stream().map(c -> c.kind() + " " + c.name()).toList());
        // kustomize's labels with includeSelectors would add to the peers' selectors too: DNS would be cut off
        assertThat(r.object("NetworkPolicy", "crucible").at("/spec/egress/0/to/0/podSelector/matchLabels"))
                .isEqualTo(Manifests.JSON.readTree("{\"k8s-app\": \"kube-dns\"}"));
    }

    @Test
    void everyComponentIsUsedByAnExample() throws Exception {
        StringBuilder overlays = new StringBuilder();
        for (String example : examples().toList()) {
            overlays.append(Files.readString(Manifests.KUSTOMIZE.resolve(example).resolve("kustomization.yaml")));
        }
        try (Stream<Path> components = Files.list(Manifests.KUSTOMIZE.resolve("components"))) {
            assertThat(components.map(c -> "../../components/" + c.getFileName()))
                    .allSatisfy(c -> assertThat(overlays).contains(c));
        }
    }

    @Test
    void theArgumentsAreServeOptionsAndBindBeyondLoopback() throws Exception {
        JsonNode c = container(rendered("."));
        String[] args = c.get("args").valueStream().map(JsonNode::asString).toArray(String[]::new);
        CommandLine.ParseResult parsed = new CommandLine(new CrucibleCommand()).parseArgs(args);
        ServeCommand serve = (ServeCommand) parsed.subcommand().commandSpec().userObject();
        assertThat(serve.host).isEqualTo("0.0.0.0");
        assertThat(serve.port).isEqualTo(c.at("/ports/0/containerPort").asInt()).isEqualTo(8080);
        assertThat(c.at("/ports/0/name").asString()).isEqualTo("http");
        assertThat(serve.dataDir).hasToString(c.at("/volumeMounts/0/mountPath").asString());
    }

    @Test
    void probesAskReadyzAndLivezAndLivenessOutlastsADrain() throws Exception {
        JsonNode c = container(rendered("."));
        // readiness: out of the Services while draining or a part is down; liveness and start-up: the process can go
        // on by itself (never failed by a drain or a part being replaced)
        Map<String, String> paths = Map.of("startupProbe", "/livez", "readinessProbe", "/readyz",
                "livenessProbe", "/livez");
        paths.forEach((probe, path) -> {
            assertThat(c.at("/" + probe + "/httpGet/path").asString()).as(probe).isEqualTo(path);
            assertThat(c.at("/" + probe + "/httpGet/port").asString()).as(probe).isEqualTo("http");
        });
        // a drain answers 503: out of the Services at the first one
        assertThat(c.at("/readinessProbe/failureThreshold").asInt()).isEqualTo(1);
        long grace = rendered(".").object("StatefulSet", "crucible")
                .at("/spec/template/spec/terminationGracePeriodSeconds").asLong();
        JsonNode liveness = c.get("livenessProbe");
        assertThat(liveness.get("periodSeconds").asLong() * liveness.get("failureThreshold").asLong())
                .as("liveness failures before a restart, s").isGreaterThan(grace);
    }

    @Test
    void terminationGraceCoversPreStopAndTheServersDrain() throws Exception {
        var rendered = rendered(".");
        JsonNode pod = rendered.object("StatefulSet", "crucible").at("/spec/template/spec");
        long preStop = pod.at("/containers/0/lifecycle/preStop/sleep/seconds").asLong();
        assertThat(preStop).isBetween(1L, 10L);
        String[] args = container(rendered).get("args").valueStream().map(JsonNode::asString).toArray(String[]::new);
        ServeCommand serve = (ServeCommand) new CommandLine(new CrucibleCommand()).parseArgs(args).subcommand()
                .commandSpec().userObject();
        long grace = serve.shutdownGraceSeconds != null ? serve.shutdownGraceSeconds
                : ServerConfig.defaults().shutdownGrace().toSeconds();
        long drain = grace + KILL_WAIT_S;
        assertThat(pod.get("terminationGracePeriodSeconds").asLong()).isGreaterThanOrEqualTo(preStop + drain + 5);
    }

    @Test
    void theDataDirIsAVolumeOfItsOwnPerReplicaOrOneSharedByAll() throws Exception {
        JsonNode set = rendered(".").object("StatefulSet", "crucible");
        JsonNode mount = container(rendered(".")).at("/volumeMounts/0");
        assertThat(mount.get("mountPath").asString()).isEqualTo("/var/lib/crucible");
        JsonNode claim = set.at("/spec/volumeClaimTemplates/0");
        assertThat(claim.at("/metadata/name").asString()).isEqualTo(mount.get("name").asString());
        assertThat(claim.at("/spec/accessModes").valueStream().map(JsonNode::asString)).containsExactly("ReadWriteOnce");
        assertThat(set.at("/spec/template/spec/volumes").isMissingNode()).isTrue();

        Rendered shared = rendered("examples/shared-data");
        JsonNode sharedSet = shared.object("StatefulSet", "crucible");
        assertThat(sharedSet.at("/spec/volumeClaimTemplates").isMissingNode()).isTrue();
        JsonNode volume = sharedSet.at("/spec/template/spec/volumes/0");
        assertThat(volume.get("name").asString()).isEqualTo(mount.get("name").asString());
        String pvc = volume.at("/persistentVolumeClaim/claimName").asString();
        assertThat(shared.object("PersistentVolumeClaim", pvc).at("/spec/accessModes/0").asString())
                .isEqualTo("ReadWriteMany");
    }

    @Test
    void tokensComeFromASecretAndNothingElseSetsCrucibleVariables() throws Exception {
        JsonNode pod = rendered(".").object("StatefulSet", "crucible").at("/spec/template/spec");
        Map<String, JsonNode> env = new HashMap<>();
        pod.at("/containers/0/env").valueStream().forEach(e -> env.put(e.get("name").asString(), e));
        assertThat(env.get("CRUCIBLE_TOKENS").has("value")).isFalse();
        assertThat(env.get("CRUCIBLE_TOKENS").at("/valueFrom/secretKeyRef/name").asString()).isEqualTo("crucible-tokens");
        assertThat(env.get("CRUCIBLE_TOKENS").at("/valueFrom/secretKeyRef").has("optional")).isFalse(); // required
        // the contract with session forwarding: the replicas from the headless Service's DNS
        assertThat(env.get("CRUCIBLE_PEERS").get("value").asString()).isEqualTo("dns:crucible-headless:8080");
        // Service links would add CRUCIBLE_PORT, CRUCIBLE_SERVICE_HOST... to the server's environment
        assertThat(pod.get("enableServiceLinks").asBoolean()).isFalse();
        assertThat(pod.get("automountServiceAccountToken").asBoolean()).isFalse();
    }

    @Test
    void resourcesFollowMaxConcurrent() throws Exception {
        JsonNode c = container(rendered("."));
        String[] args = c.get("args").valueStream().map(JsonNode::asString).toArray(String[]::new);
        ServeCommand serve = (ServeCommand) new CommandLine(new CrucibleCommand()).parseArgs(args).subcommand()
                .commandSpec().userObject();
        assertThat(serve.maxConcurrent).isEqualTo(2 * Integer.parseInt(c.at("/resources/limits/cpu").asString()));
        long limitMi = mebibytes(c.at("/resources/limits/memory").asString());
        assertThat(limitMi).as("the server + max-concurrent runs of 512 MiB + the sessions' budget")
                .isGreaterThanOrEqualTo(1536 + serve.maxConcurrent * 512L + serve.sessionsMemoryMb);
        assertThat(mebibytes(c.at("/resources/requests/memory").asString())).isLessThanOrEqualTo(limitMi);
    }

    static long mebibytes(String quantity) {
        if (quantity.endsWith("Gi")) {
            return Long.parseLong(quantity.substring(0, quantity.length() - 2)) * 1024;
        }
        assertThat(quantity).endsWith("Mi");
        return Long.parseLong(quantity.substring(0, quantity.length() - 2));
    }

    @Test
    void theBaseNetworkPolicyLetsNothingOutButDnsAndThePeers() throws Exception {
        JsonNode policy = rendered(".").object("NetworkPolicy", "crucible").get("spec");
        JsonNode podLabels = rendered(".").object("StatefulSet", "crucible").at("/spec/template/metadata/labels");
        assertThat(policy.get("podSelector").get("matchLabels")).isEqualTo(podLabels);
        assertThat(policy.get("policyTypes").valueStream().map(JsonNode::asString)).contains("Ingress", "Egress");
        assertThat(policy.get("ingress").valueStream().flatMap(r -> r.get("ports").valueStream())
                .map(p -> p.get("port").asInt())).containsOnly(8080);
        for (JsonNode rule : policy.get("egress").valueStream().toList()) {
            assertThat(rule.has("to")).as("a rule without `to` lets out anywhere: %s", rule).isTrue();
            assertThat(rule.get("to").valueStream()).noneMatch(peer -> peer.has("ipBlock"));
            List<Integer> ports = rule.get("ports").valueStream().map(p -> p.get("port").asInt()).distinct().toList();
            JsonNode selector = rule.at("/to/0/podSelector/matchLabels");
            if (ports.equals(List.of(53))) {
                assertThat(selector).isEqualTo(Manifests.JSON.readTree("{\"k8s-app\": \"kube-dns\"}"));
            } else {
                assertThat(ports).containsExactly(8080);
                assertThat(selector).isEqualTo(podLabels);
            }
        }
    }

    @Test
    void theSecurityContextIsWhatTheContainerTestProvedUnderPodman() throws Exception {
        List<String> podman = PodmanContainer.security(false);
        String capabilities = podman.get(podman.indexOf("--cap-add") + 1);
        JsonNode base = container(rendered("."));
        assertThat(base.at("/securityContext/capabilities/add").valueStream().map(JsonNode::asString))
                .containsExactlyInAnyOrder(capabilities.split(","));
        assertThat(base.at("/securityContext/capabilities/drop/0").asString()).isEqualTo("ALL");
        assertThat(base.at("/securityContext/privileged").asBoolean()).isFalse();
        assertThat(base.at("/securityContext/allowPrivilegeEscalation").asBoolean()).as("no-new-privileges").isFalse();
        assertThat(base.at("/securityContext/procMount").asString()).as("unmask=/proc/*").isEqualTo("Unmasked");
        JsonNode pod = rendered(".").object("StatefulSet", "crucible").at("/spec/template/spec");
        assertThat(pod.get("hostUsers").asBoolean()).as("--uidmap: a user namespace per pod").isFalse();
        assertThat(pod.at("/securityContext/seccompProfile/type").asString()).isEqualTo("Localhost");
        assertThat(podman).contains("seccomp=deploy/podman/" + pod.at("/securityContext/seccompProfile/localhostProfile")
                .asString());
        assertThat(container(rendered("examples/egress")).at("/securityContext/capabilities/add").valueStream()
                .map(JsonNode::asString)).as("egress makes namespaces").contains("SYS_ADMIN", "NET_ADMIN");
    }

    @Test
    void theEgressComponentOpensPort443AndHandsTheServerItsAllowlist() throws Exception {
        Rendered r = rendered("examples/egress");
        List<JsonNode> added = r.object("NetworkPolicy", "crucible").at("/spec/egress").valueStream()
                .filter(rule -> rule.path("to").valueStream().anyMatch(peer -> peer.has("ipBlock"))).toList();
        assertThat(added).hasSize(1);
        assertThat(added.getFirst().get("ports").valueStream().map(p -> p.get("port").asInt())).containsOnly(443);
        assertThat(added.getFirst().at("/to/0/ipBlock/except").valueStream().map(JsonNode::asString))
                .contains("169.254.0.0/16", "10.0.0.0/8");
        JsonNode allow = container(r).get("env").valueStream()
                .filter(e -> e.get("name").asString().equals("CRUCIBLE_EGRESS_ALLOW")).findFirst().orElseThrow();
        String configMap = allow.at("/valueFrom/configMapKeyRef/name").asString();
        String list = r.object("ConfigMap", configMap).at("/data/CRUCIBLE_EGRESS_ALLOW").asString();
        assertThat(ServerConfig.egressFrom(list).allows("pypi.org", 443)).isTrue(); // as the server reads it
    }

    @Test
    void theAutoscalerScalesTheStatefulSetOnCpuOrOnTheQueue() throws Exception {
        for (String dir : List.of(".", "examples/queue-depth")) {
            JsonNode target = rendered(dir).object("HorizontalPodAutoscaler", "crucible").at("/spec/scaleTargetRef");
            assertThat(target.get("apiVersion").asString() + " " + target.get("kind").asString() + " "
                    + target.get("name").asString()).isEqualTo("apps/v1 StatefulSet crucible");
        }
        JsonNode cpu = rendered(".").object("HorizontalPodAutoscaler", "crucible").at("/spec/metrics/0");
        assertThat(cpu.at("/resource/name").asString()).isEqualTo("cpu");
        assertThat(rendered("examples/queue-depth").object("HorizontalPodAutoscaler", "crucible").at("/spec/metrics")
                .valueStream().map(m -> m.get("type").asString() + " " + m.at("/pods/metric/name").asString()))
                .containsExactly("Pods crucible_queue_depth", "Pods crucible_running");
    }

    @Test
    void theServiceMonitorScrapesEachReplicaOnceWithAToken() throws Exception {
        Rendered r = rendered("examples/servicemonitor");
        JsonNode monitor = r.object("ServiceMonitor", "crucible").get("spec");
        JsonNode wanted = monitor.at("/selector/matchLabels");
        for (var service : List.of(Map.entry("crucible", true), Map.entry("crucible-headless", false))) {
            JsonNode labels = r.object("Service", service.getKey()).at("/metadata/labels");
            boolean selected = wanted.properties().stream()
                    .allMatch(e -> e.getValue().equals(labels.get(e.getKey())));
            assertThat(selected).as(service.getKey()).isEqualTo(service.getValue());
        }
        assertThat(monitor.at("/endpoints/0/port").asString()).isEqualTo("http");
        assertThat(monitor.at("/endpoints/0/path").asString()).isEqualTo("/metrics");
        assertThat(monitor.at("/endpoints/0/authorization/credentials/name").asString()).isEqualTo("crucible-tokens");
    }

    @Test
    void theServicesReachTheReplicasByName() throws Exception {
        Rendered r = rendered(".");
        JsonNode podLabels = r.object("StatefulSet", "crucible").at("/spec/template/metadata/labels");
        JsonNode api = r.object("Service", "crucible").get("spec");
        assertThat(api.at("/ports/0/port").asInt()).isEqualTo(80);
        assertThat(api.at("/ports/0/targetPort").asString()).isEqualTo("http");
        JsonNode headless = r.object("Service", "crucible-headless").get("spec");
        assertThat(headless.get("clusterIP").asString()).isEqualTo("None");
        assertThat(headless.get("publishNotReadyAddresses").asBoolean()).isFalse();
        assertThat(r.object("StatefulSet", "crucible").at("/spec/serviceName").asString()).isEqualTo("crucible-headless");
        for (JsonNode selector : List.of(api.get("selector"), headless.get("selector"),
                r.object("PodDisruptionBudget", "crucible").at("/spec/selector/matchLabels"))) {
            assertThat(selector).isEqualTo(podLabels);
        }
        assertThat(r.object("PodDisruptionBudget", "crucible").at("/spec/maxUnavailable").asInt()).isEqualTo(1);
    }
}
