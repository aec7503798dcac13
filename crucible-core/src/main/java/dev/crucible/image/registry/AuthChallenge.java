package dev.crucible.image.registry;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * One challenge of a {@code WWW-Authenticate} header (RFC 7235): {@code Bearer realm="…",service="…",scope="…"}
 * or {@code Basic realm="…"}. The scheme and parameter names are lowercased; quoted values are unescaped.
 *
 * @param scheme {@code bearer}, {@code basic}, …
 * @param params the auth-params by lowercased name
 */
record AuthChallenge(String scheme, Map<String, String> params) {
    AuthChallenge {
        params = Map.copyOf(params);
    }

    String param(String name) {
        return params.get(name);
    }

    /** Every challenge in the given header values, in order; what does not parse is skipped. */
    static List<AuthChallenge> parseAll(List<String> headers) {
        List<AuthChallenge> challenges = new ArrayList<>();
        for (String header : headers) {
            new Parser(header).challenges(challenges);
        }
        return challenges;
    }

    /** A small tokenizer over one header value: {@code 1#( scheme [ 1*SP #auth-param ] )}. */
    private static final class Parser {
        private final String text;
        private int at;

        Parser(String text) {
            this.text = text == null ? "" : text;
        }

        void challenges(List<AuthChallenge> into) {
            String scheme = null;
            Map<String, String> params = new LinkedHashMap<>();
            while (true) {
                skip(" \t,");
                if (at >= text.length()) {
                    break;
                }
                String token = token();
                if (token.isEmpty()) {
                    break; // garbage: keep what parsed
                }
                skip(" \t");
                if (at < text.length() && text.charAt(at) == '=' && scheme != null) {
                    at++;
                    skip(" \t");
                    params.put(token.toLowerCase(Locale.ROOT), value());
                } else {
                    if (scheme != null) {
                        into.add(new AuthChallenge(scheme, params));
                    }
                    scheme = token.toLowerCase(Locale.ROOT);
                    params = new LinkedHashMap<>();
                }
            }
            if (scheme != null) {
                into.add(new AuthChallenge(scheme, params));
            }
        }

        private String token() {
            int start = at;
            while (at < text.length() && " \t,=\"".indexOf(text.charAt(at)) < 0) {
                at++;
            }
            return text.substring(start, at);
        }

        private String value() {
            if (at >= text.length() || text.charAt(at) != '"') {
                return token();
            }
            StringBuilder value = new StringBuilder();
            for (at++; at < text.length() && text.charAt(at) != '"'; at++) {
                if (text.charAt(at) == '\\' && at + 1 < text.length()) {
                    at++;
                }
                value.append(text.charAt(at));
            }
            at++; // the closing quote
            return value.toString();
        }

        private void skip(String chars) {
            while (at < text.length() && chars.indexOf(text.charAt(at)) >= 0) {
                at++;
            }
        }
    }
}
