/** One page of the console: a route (`#id`, with more after a slash), a name in the navigation, and its section. */
export interface Page {
  id: string;
  title: string;
  /** Other names the route answers to (an older link's). */
  aliases?: string[];
  /** Builds the page into its section, once, the first time it is shown. */
  mount(section: HTMLElement): void | Promise<void>;
  /** The page is shown (again): `rest` is the route after `#id/` (a session's id), or "". */
  show?(rest: string): void | Promise<void>;
}
