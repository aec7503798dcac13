// The console: sign-in, then the pages by the URL's fragment. Served from the JAR under a strict
// Content-Security-Policy: this bundle is the page's one script (by its nonce), styles come from console.css or carry
// the page's style nonce (ui/nonce, imported first), and everything a sandbox produced is shown as text (ui/dom).
import "./ui/nonce";
import "@xterm/xterm/css/xterm.css";
import "./styles/console.css";
import { describe } from "./api/client";
import { evaluationsPage } from "./pages/evaluations";
import { runPage } from "./pages/run";
import { serverPage } from "./pages/server";
import { sessionsPage } from "./pages/sessions";
import { signedIn, signIn } from "./pages/signin";
import { Router } from "./router";
import { byId, el } from "./ui/dom";

const main = byId("app");
const router = new Router([runPage(), sessionsPage(), evaluationsPage(), serverPage()], main, byId("nav"));

void (async () => {
  try {
    if (await signedIn()) await router.start();
    else signIn(main, () => void router.start());
  } catch (e) {
    main.replaceChildren(
      el("p", { class: "error" }, `The server did not answer: ${describe(e)}. Reload to try again.`),
    );
  }
})();
