package dev.crucible.eval.codex;

import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * Codex Runner's {@code generate-completions} over any OpenAI-compatible chat completions API: for each question,
 * {@code n} completions of {@code prompt + answer_preload}, each stored as {@code answer_preload + code} (the code of
 * a fenced block when the model wrote one). 429 and 5xx are retried with exponential back-off (or the server's
 * Retry-After); another error is recorded for that question and the rest go on.
 */
public final class Completions {
    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final Pattern FENCE = Pattern.compile("```[\\w+-]*[^\\n]*\\n([\\s\\S]*?)```");

    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(20)).build();

    /** Where and how to ask. */
    public record Options(URI baseUrl, String apiKey, String model, int n, int maxTokens, double temperature,
            int maxRetries, Duration backoff) {}

    public record Summary(int questions, int completions, int requests, int retries, List<String> problems) {}

    /**
     * The API key: {@code OPENAI_API_KEY}, else that line of a {@code .env} file in {@code dir}; null when neither.
     */
    public static String apiKey(Map<String, String> env, Path dir) throws IOException {
        String key = env.get("OPENAI_API_KEY");
        if (key != null && !key.isBlank()) {
            return key.strip();
        }
        Path dotenv = dir.resolve(".env");
        if (Files.isRegularFile(dotenv)) {
            for (String line : Files.readAllLines(dotenv)) {
                String l = line.strip();
                if (l.startsWith("export ")) {
                    l = l.substring(7).strip();
                }
                if (l.startsWith("OPENAI_API_KEY=")) {
                    String v = l.substring("OPENAI_API_KEY=".length()).strip();
                    if (v.length() >= 2 && (v.startsWith("\"") && v.endsWith("\"") || v.startsWith("'") && v.endsWith("'"))) {
                        v = v.substring(1, v.length() - 1);
                    }
                    return v;
                }
            }
        }
        return null;
    }

    public Summary generate(ObjectNode root, Options o) throws InterruptedException {
        List<String> problems = new ArrayList<>();
        int[] counts = new int[3]; // completions, requests, retries
        int questions = 0;
        for (JsonNode q : root.get("questions")) {
            questions++;
            if (!(q instanceof ObjectNode question)) {
                continue;
            }
            String id = question.path("id").asString("question " + questions);
            String preload = question.path("answer_preload").asString("");
            String prompt = question.path("prompt").asString("") + preload;
            ArrayNode out = question.putArray("completions");
            int attempts = 0;
            while (out.size() < o.n() && attempts++ < o.n() + 2) {
                JsonNode answer;
                try {
                    answer = ask(o, prompt, o.n() - out.size(), counts);
                } catch (IOException e) {
                    problems.add(id + ": " + e.getMessage());
                    break;
                }
                for (JsonNode choice : answer.path("choices")) {
                    if (out.size() < o.n()) {
                        out.addObject().put("completion", completion(preload,
                                choice.path("message").path("content").asString("")));
                        counts[0]++;
                    }
                }
                if (answer.path("choices").isEmpty()) {
                    problems.add(id + ": the API answered no choices");
                    break;
                }
            }
        }
        return new Summary(questions, counts[0], counts[1], counts[2], problems);
    }

    /** The preload, then the code (from a fence if any), unless the code already starts with the preload. */
    static String completion(String preload, String content) {
        Matcher m = FENCE.matcher(content);
        String code = m.find() ? m.group(1) : content;
        return !preload.isBlank() && code.strip().startsWith(preload.strip()) ? code : preload + code;
    }

    private JsonNode ask(Options o, String prompt, int n, int[] counts) throws IOException, InterruptedException {
        ObjectNode body = JSON.createObjectNode().put("model", o.model()).put("n", n)
                .put("max_tokens", o.maxTokens()).put("temperature", o.temperature());
        body.putArray("messages").addObject().put("role", "user").put("content", prompt);
        String base = o.baseUrl().toString().replaceAll("/+$", "");
        HttpRequest request = HttpRequest.newBuilder(URI.create(base + "/chat/completions"))
                .timeout(Duration.ofMinutes(5)).header("Content-Type", "application/json")
                .header("Authorization", "Bearer " + o.apiKey())
                .POST(HttpRequest.BodyPublishers.ofByteArray(JSON.writeValueAsBytes(body))).build();
        for (int attempt = 0; ; attempt++) {
            counts[1]++;
            HttpResponse<String> r;
            try {
                r = http.send(request, HttpResponse.BodyHandlers.ofString());
            } catch (IOException e) {
                if (attempt >= o.maxRetries()) {
                    throw new IOException("the API did not answer POST " + request.uri() + ": " + why(e)
                            + (attempt == 0 ? "" : " (" + (attempt + 1) + " attempts)"), e);
                }
                counts[2]++;
                Thread.sleep(backoff(o, attempt, null));
                continue;
            }
            int status = r.statusCode();
            if (status == 200) {
                return JSON.readTree(r.body());
            }
            if ((status == 429 || status >= 500) && attempt < o.maxRetries()) {
                counts[2]++;
                Thread.sleep(backoff(o, attempt, r.headers().firstValue("Retry-After").orElse(null)));
                continue;
            }
            String message = r.body().length() > 300 ? r.body().substring(0, 300) : r.body();
            throw new IOException("the API answered " + status + ": " + message.strip());
        }
    }

    /**
     * What a failed request tells: the JDK's client often gives no message at all (a refused connection is a
     * {@code ConnectException} with none, and so is its cause), so the exception's class says it, with the first
     * message found along its causes.
     */
    static String why(IOException e) {
        String message = null;
        for (Throwable t = e; t != null && message == null; t = t.getCause()) {
            message = t.getMessage();
        }
        if (e instanceof ConnectException) {
            return "cannot connect (" + (message != null ? message : "connection refused, or no route to the host")
                    + "; " + e.getClass().getName() + ")";
        }
        return e.getClass().getName() + (message == null ? "" : ": " + message);
    }

    private static long backoff(Options o, int attempt, String retryAfter) {
        if (retryAfter != null && retryAfter.matches("\\d{1,4}")) {
            return Math.min(60_000, Long.parseLong(retryAfter) * 1000);
        }
        return Math.min(30_000, o.backoff().toMillis() << Math.min(attempt, 10));
    }
}
