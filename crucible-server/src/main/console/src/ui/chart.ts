// A line chart of the last minutes: a y axis with round ticks in the series' unit, an x axis in minutes before now,
// a legend with each series' latest value. Drawn in SVG from attributes and classes alone (no inline style).
import { el, svg } from "./dom";

export interface Series {
  label: string;
  values: number[];
}

export interface ChartOptions {
  id: string;
  title: string;
  /**
   * How many samples the chart spans at most, and the time between two: it spans what it has (at least `least`
   * samples) until it has this many, then the last `capacity`.
   */
  capacity: number;
  least?: number;
  stepMs: number;
  /** A value in the series' unit, for the axis and the legend (`12/s`, `40 ms`, `3`). */
  format: (value: number) => string;
  /** The least top of the y axis (a chart of counts at zero still shows 0 to 1). */
  floor?: number;
  /** Whether the values are whole numbers (counts): ticks at whole numbers only. */
  integer?: boolean;
}

const W = 440,
  H = 190,
  LEFT = 64,
  RIGHT = 10,
  TOP = 10,
  BOTTOM = 24;

export class LineChart {
  readonly element: HTMLElement;
  private readonly plot: SVGSVGElement;
  private readonly legend: HTMLElement;

  constructor(private readonly options: ChartOptions) {
    this.plot = svg("svg", { id: options.id, viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": options.title });
    this.legend = el("span", { class: "legend" });
    this.element = el(
      "figure",
      { class: "chart" },
      el("figcaption", {}, el("strong", {}, options.title), this.legend),
      this.plot,
    );
    this.draw([]);
  }

  /** Draws the series (the newest sample at the right edge). */
  draw(series: Series[]): void {
    const { format } = this.options;
    const had = Math.max(0, ...series.map((s) => s.values.length));
    const capacity = Math.min(this.options.capacity, Math.max(had, this.options.least ?? 10));
    const max = Math.max(0, ...series.flatMap((s) => s.values));
    const floor = this.options.floor ?? 0;
    const raw = niceStep(Math.max(max, floor) / 4 || 0.25);
    const step = this.options.integer ? Math.max(1, Math.round(raw)) : raw;
    const top = Math.max(step, floor, Math.ceil(max / step) * step);
    const x = (i: number, n: number) => LEFT + ((capacity - n + i) / (capacity - 1)) * (W - LEFT - RIGHT);
    const y = (v: number) => TOP + (1 - v / top) * (H - TOP - BOTTOM);
    const grid = [];
    for (let v = 0; v <= top + step / 2; v += step) {
      grid.push(
        svg("line", { class: "grid", x1: LEFT, x2: W - RIGHT, y1: y(v), y2: y(v) }),
        svg("text", { class: "tick", x: LEFT - 6, y: y(v) + 4, "text-anchor": "end" }, format(v)),
      );
    }
    const spanS = ((capacity - 1) * this.options.stepMs) / 1000;
    const every = [5, 10, 30, 60, 120, 300, 600].find((s) => spanS / s <= 6) ?? 600;
    for (let t = 0; t <= spanS; t += every) {
      const at = LEFT + (1 - t / spanS) * (W - LEFT - RIGHT);
      grid.push(
        svg("line", { class: "axis", x1: at, x2: at, y1: H - BOTTOM, y2: H - BOTTOM + 4 }),
        svg(
          "text",
          { class: "tick", x: at, y: H - 6, "text-anchor": t === 0 ? "end" : "middle" },
          t === 0 ? "now" : `−${t >= 60 && t % 60 === 0 ? `${t / 60} min` : `${t} s`}`,
        ),
      );
    }
    const lines = series.map((s, i) =>
      svg("polyline", {
        class: `line s${i}`,
        points: s.values.map((v, j) => `${x(j, s.values.length).toFixed(1)},${y(v).toFixed(1)}`).join(" "),
      }),
    );
    this.plot.replaceChildren(
      ...grid,
      svg("line", { class: "axis", x1: LEFT, x2: LEFT, y1: TOP, y2: H - BOTTOM }),
      svg("line", { class: "axis", x1: LEFT, x2: W - RIGHT, y1: H - BOTTOM, y2: H - BOTTOM }),
      ...lines,
    );
    this.plot.dataset.max = String(max);
    this.plot.dataset.samples = String(had);
    this.legend.replaceChildren(
      ...series.map((s, i) =>
        el(
          "span",
          { class: `key s${i}` },
          s.label,
          " ",
          el("b", {}, s.values.length ? format(s.values[s.values.length - 1]) : "–"),
        ),
      ),
    );
  }
}

/** 1, 2, 2.5 or 5 times a power of ten: the smallest at least `raw`. */
function niceStep(raw: number): number {
  const power = 10 ** Math.floor(Math.log10(raw));
  return ([1, 2, 2.5, 5, 10].find((m) => m * power >= raw) ?? 10) * power;
}
