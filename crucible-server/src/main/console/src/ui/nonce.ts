// Imported first by main.ts: CodeMirror and xterm.js make <style> elements of their own, and under the page's policy
// (no 'unsafe-inline') a style element applies only with the page's style nonce. Each one made here gets it.

/** The page's style nonce, from its meta tag (the script nonce is never in the DOM). */
export const nonce = document.querySelector<HTMLMetaElement>('meta[name="crucible-nonce"]')?.content ?? "";

type Create = (this: Document, name: string, options?: ElementCreationOptions) => HTMLElement;
const prototype = Document.prototype as unknown as { createElement: Create };
const createElement = prototype.createElement;
prototype.createElement = function (name, options) {
  const element = createElement.call(this, name, options);
  if (String(name).toLowerCase() === "style") element.setAttribute("nonce", nonce);
  return element;
};
