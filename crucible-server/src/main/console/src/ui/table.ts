// A table of rows that sorts by any column (a click on its header; again to reverse) and filters by the text the
// user types (any column's text) and by a predicate a page sets (the evaluations' "failed only"). Cells are text or
// nodes a page makes; the rows are kept, the DOM redrawn from them.
import { type Child, el } from "./dom";

/** One column: its header, the value it sorts by, and how a cell shows it (the value as text by default). */
export interface Column<T> {
  key: string;
  label: string;
  /** The value sorted and filtered by: numbers sort as numbers, the rest as text (with numbers inside in order). */
  value: (row: T) => string | number | null | undefined;
  /** The text the filter box matches (the value's, when absent). */
  text?: (row: T) => string;
  /** The cell's content; the value, as text, when absent. */
  show?: (row: T) => Child | Child[];
  /** A class for the cell (`num` aligns right; `pass`, `fail` colour it). */
  className?: (row: T) => string | undefined;
  /** Whether the column's values are numbers (aligned right; the first click sorts the largest first). */
  numeric?: boolean;
}

export interface TableOptions<T> {
  id: string;
  columns: Column<T>[];
  /** A filter box above the table, with this placeholder. */
  filter?: string;
  /** What a click on a row does (the row is marked selected). */
  open?: (row: T, tr: HTMLTableRowElement) => void;
  /** Each row's `data-key` (for tests and to keep the selection across redraws). */
  key?: (row: T) => string;
  /** Attributes of a row (`data-state`…). */
  rowData?: (row: T) => Record<string, string>;
  /** The sort at first: a column's key, and whether descending. */
  sort?: { key: string; descending: boolean };
  /** Shown in place of the rows when there are none. */
  empty?: string;
  /** Told the number of rows shown after every redraw. */
  shown?: (n: number) => void;
}

export class Table<T> {
  /** The filter box (if any) and the table. */
  readonly element: HTMLElement;
  readonly table: HTMLTableElement;
  private readonly body = el("tbody");
  private readonly head = el("tr");
  private readonly search?: HTMLInputElement;
  private rows: T[] = [];
  private predicate: (row: T) => boolean = () => true;
  private sort?: { key: string; descending: boolean };
  private selected?: string;

  constructor(private readonly options: TableOptions<T>) {
    this.sort = options.sort;
    this.table = el("table", { id: options.id, class: "grid" }, el("thead", {}, this.head), this.body);
    if (options.filter !== undefined) {
      this.search = el("input", {
        type: "search",
        class: "filter",
        placeholder: options.filter,
        "aria-label": `filter ${options.id}`,
        oninput: () => this.draw(),
      });
    }
    this.element = el("div", { class: "table" }, this.search, el("div", { class: "scroll" }, this.table));
    this.draw();
  }

  /** Replaces the rows (the sort, the filter and the selection stay). */
  set(rows: T[]): void {
    this.rows = rows;
    this.draw();
  }

  /** Keeps only the rows `predicate` accepts (beside the typed filter). */
  where(predicate: (row: T) => boolean): void {
    this.predicate = predicate;
    this.draw();
  }

  /** Sorts by a column (a header click does the same). */
  sortBy(key: string, descending: boolean): void {
    this.sort = { key, descending };
    this.draw();
  }

  /** The rows as shown, in order. */
  visible(): T[] {
    const query = this.search?.value.trim().toLowerCase() ?? "";
    const shown = this.rows.filter(
      (row) =>
        this.predicate(row) &&
        (!query ||
          this.options.columns.some((c) =>
            (c.text?.(row) ?? String(c.value(row) ?? "")).toLowerCase().includes(query),
          )),
    );
    const column = this.options.columns.find((c) => c.key === this.sort?.key);
    if (column && this.sort) {
      const sign = this.sort.descending ? -1 : 1;
      shown.sort((a, b) => {
        const x = column.value(a),
          y = column.value(b);
        if (x === null || x === undefined || y === null || y === undefined) return absentLast(x, y); // either way
        return sign * compare(x, y);
      });
    }
    return shown;
  }

  private draw(): void {
    this.head.replaceChildren(
      ...this.options.columns.map((c) => {
        const sorted = this.sort?.key === c.key ? (this.sort.descending ? "descending" : "ascending") : "none";
        return el(
          "th",
          { class: c.numeric ? "num" : undefined, "aria-sort": sorted, "data-key": c.key },
          el(
            "button",
            {
              type: "button",
              class: "sort",
              onclick: () => this.sortBy(c.key, this.sort?.key === c.key ? !this.sort.descending : Boolean(c.numeric)),
            },
            c.label,
            sorted === "none" ? "" : sorted === "ascending" ? " ▲" : " ▼",
          ),
        );
      }),
    );
    const rows = this.visible();
    this.body.replaceChildren(...rows.map((row) => this.row(row)));
    if (rows.length === 0 && this.options.empty) {
      this.body.append(
        el(
          "tr",
          { class: "empty" },
          el(
            "td",
            { colspan: this.options.columns.length },
            this.rows.length ? "Nothing matches the filter." : this.options.empty,
          ),
        ),
      );
    }
    this.options.shown?.(rows.length);
  }

  private row(row: T): HTMLTableRowElement {
    const key = this.options.key?.(row);
    const tr = el(
      "tr",
      {
        ...this.options.rowData?.(row),
        "data-key": key,
        class: key !== undefined && key === this.selected ? "selected" : undefined,
      },
      ...this.options.columns.map((c) =>
        el(
          "td",
          { class: [c.numeric ? "num" : "", c.className?.(row) ?? ""].join(" ").trim() || undefined },
          c.show ? c.show(row) : String(c.value(row) ?? ""),
        ),
      ),
    );
    if (this.options.open) {
      tr.classList.add("link");
      tr.addEventListener("click", (event) => {
        if ((event.target as Element).closest("button, a, input")) return; // a control inside the row acts alone
        for (const other of this.body.querySelectorAll("tr.selected")) other.classList.remove("selected");
        tr.classList.add("selected");
        this.selected = key;
        this.options.open?.(row, tr);
      });
    }
    return tr;
  }
}

const collator = new Intl.Collator("en", { numeric: true });

function compare(a: string | number, b: string | number): number {
  if (typeof a === "number" && typeof b === "number") return a - b;
  return collator.compare(String(a), String(b));
}

function absentLast(a: unknown, b: unknown): number {
  return (a === null || a === undefined ? 1 : 0) - (b === null || b === undefined ? 1 : 0);
}
