// Elements made in one call each, their children as text nodes: nothing a sandbox or the server sends becomes markup,
// and no inline style or handler attribute is ever set (the page's Content-Security-Policy admits neither).

/** What an element may hold: nodes, or strings and numbers (as text nodes); null, undefined and false are skipped. */
export type Child = Node | string | number | null | undefined | false;
type Handler = (event: Event) => void;
/** Attributes (strings, numbers; `true` an empty one, false/null/undefined none) and `on…` listeners. */
export type Props = Record<string, string | number | boolean | null | undefined | Handler>;

/** An HTML element with `props` and `children`. */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Props = {},
  ...children: (Child | Child[])[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  apply(element, props);
  element.append(...nodes(children));
  return element;
}

const SVG = "http://www.w3.org/2000/svg";

/** An SVG element (charts): attributes only, children as for `el`. */
export function svg<K extends keyof SVGElementTagNameMap>(
  tag: K,
  props: Props = {},
  ...children: (Child | Child[])[]
): SVGElementTagNameMap[K] {
  const element = document.createElementNS(SVG, tag);
  apply(element, props);
  element.append(...nodes(children));
  return element;
}

/** The children as nodes: text as text nodes, never parsed. */
export function nodes(children: (Child | Child[])[]): Node[] {
  return children
    .flat()
    .filter((c): c is Node | string | number => c !== null && c !== undefined && c !== false)
    .map((c) => (c instanceof Node ? c : document.createTextNode(String(c))));
}

function apply(element: Element, props: Props): void {
  for (const [name, value] of Object.entries(props)) {
    if (typeof value === "function") {
      element.addEventListener(name.replace(/^on/, ""), value);
    } else if (name === "style" || name.startsWith("on")) {
      throw new TypeError(
        `no ${name} attribute: the page's policy refuses inline styles and handlers (a class, or a listener)`,
      );
    } else if (value !== undefined && value !== null && value !== false) {
      element.setAttribute(name, value === true ? "" : String(value));
    }
  }
}

/**
 * A fact about the page on `<body data-…>`, for the browser test to wait on (a session's id, a count of rows): the
 * page says when something happened, the test never sleeps for it. `undefined` removes it.
 */
export function announce(name: string, value: string | number | undefined): void {
  if (value === undefined) delete document.body.dataset[name];
  else document.body.dataset[name] = String(value);
}

/** A line of status text that can be replaced (an action's outcome, a refusal's code and message). */
export function statusLine(id: string): { element: HTMLElement; say(text: string, bad?: boolean): void } {
  const element = el("p", { id, class: "status", role: "status" });
  return {
    element,
    say(text, bad = false) {
      element.textContent = text;
      element.classList.toggle("error", bad);
    },
  };
}

/** The page's element `id`: the page's own HTML has it, so its absence is a bug said so. */
export function byId(id: string): HTMLElement {
  const found = document.getElementById(id);
  if (!found) throw new Error(`the page has no #${id}`);
  return found;
}
