// Sign-in: a server with tokens asks for one once; it is kept for this tab (sessionStorage) and sent in each call's
// Authorization header. A token-less loopback server needs none.
import { CrucibleError } from "@crucible/sdk";
import { crucible, token, useToken } from "../api/client";
import { byId, el } from "../ui/dom";

/** Whether the server answers this tab (with its token, or none); says so in the header. */
export async function signedIn(): Promise<boolean> {
  try {
    await crucible().runtimes();
  } catch (e) {
    if (e instanceof CrucibleError && e.status === 401) return false;
    throw e;
  }
  byId("signed").textContent = token() ? "signed in (this tab)" : "no token needed";
  return true;
}

/** Shows the sign-in form in `main` until the server takes a token, then calls `done`. */
export function signIn(main: HTMLElement, done: () => void): void {
  const input = el("input", {
    id: "token",
    type: "password",
    autocomplete: "off",
    placeholder: "token",
    "aria-label": "token",
  });
  const error = el("p", { id: "signin-error", class: "error" });
  const section = el(
    "section",
    { id: "signin" },
    el("h1", {}, "Sign in"),
    el("p", {}, "This server wants a bearer token. It is kept for this tab only, never in a URL or in local storage."),
    el(
      "form",
      {
        id: "signin-form",
        onsubmit: async (event: Event) => {
          event.preventDefault();
          useToken(input.value.trim());
          input.value = "";
          if (await signedIn()) {
            section.remove();
            done();
          } else {
            useToken(undefined);
            error.textContent = "The server refused that token.";
          }
        },
      },
      input,
      el("button", { type: "submit" }, "Sign in"),
    ),
    error,
  );
  main.replaceChildren(section);
  input.focus();
}
