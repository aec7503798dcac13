// The pages by the URL's fragment: `#sessions/<id>` shows the sessions page with that session open. A page is built
// the first time it is shown, and kept (hidden) while another is.
import { describe } from "./api/client";
import type { Page } from "./pages/page";
import { el } from "./ui/dom";

export class Router {
  private readonly sections = new Map<string, HTMLElement>();
  private readonly links: HTMLAnchorElement[];

  constructor(
    private readonly pages: Page[],
    private readonly main: HTMLElement,
    nav: HTMLElement,
  ) {
    this.links = pages.map((p) => el("a", { href: `#${p.id}`, "data-page": p.id }, p.title));
    nav.replaceChildren(...this.links);
  }

  /** Shows the page the URL names, and follows the URL from now on. */
  start(): Promise<void> {
    window.addEventListener("hashchange", () => void this.go(location.hash));
    return this.go(location.hash);
  }

  /** Shows a page; what fails on the way is said on the page (the server gone, a refusal), never thrown. */
  private async go(hash: string): Promise<void> {
    try {
      await this.show(hash);
    } catch (e) {
      this.main.querySelector("section:not([hidden])")?.append(el("p", { class: "error" }, describe(e)));
    }
  }

  private async show(hash: string): Promise<void> {
    const [id, ...rest] = hash.replace(/^#/, "").split("/");
    const page = this.pages.find((p) => p.id === id || p.aliases?.includes(id)) ?? this.pages[0];
    for (const section of this.main.children) (section as HTMLElement).hidden = section.id !== page.id;
    for (const link of this.links) link.classList.toggle("active", link.dataset.page === page.id);
    let section = this.sections.get(page.id);
    if (!section) {
      section = el("section", { id: page.id });
      this.sections.set(page.id, section);
      this.main.append(section);
      await page.mount(section);
    }
    section.hidden = false;
    document.title = `${page.title} · Crucible`;
    await page.show?.(rest.map(decodeURIComponent).join("/"));
  }
}
