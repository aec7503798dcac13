// Numbers as a person reads them: sizes in binary units, durations in the largest units that fit, rates per second,
// times relative to now. Every value the console shows goes through here.

const SIZES = ["B", "KiB", "MiB", "GiB", "TiB"];

/** Bytes: `512 B`, `1.5 KiB`, `256 MiB`, `1.2 GiB`. */
export function bytes(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return "–";
  let value = Math.abs(n);
  let unit = 0;
  while (value >= 1024 && unit < SIZES.length - 1) {
    value /= 1024;
    unit++;
  }
  const shown = unit === 0 || value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(2);
  return `${n < 0 ? "-" : ""}${trim(shown)} ${SIZES[unit]}`;
}

/** A size given in MiB (the API's `memory_mb`). */
export function mebibytes(mb: number | null | undefined): string {
  return mb === null || mb === undefined ? "–" : bytes(mb * 1024 * 1024);
}

/** Milliseconds: `0.4 ms`, `850 ms`, `1.25 s`, `3 min 20 s`, `2 h 5 min`, `3 d 4 h`. */
export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return "–";
  if (ms < 1) return `${trim(ms.toFixed(2))} ms`;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${trim(s.toFixed(s < 10 ? 2 : 1))} s`;
  const units: [string, number][] = [
    ["d", 86_400],
    ["h", 3600],
    ["min", 60],
    ["s", 1],
  ];
  const parts: string[] = [];
  let rest = Math.round(s);
  for (const [unit, size] of units) {
    if (rest >= size || parts.length > 0) {
      parts.push(`${Math.floor(rest / size)} ${unit}`);
      rest %= size;
    }
    if (parts.length === 2) break;
  }
  return parts.filter((p) => !p.startsWith("0 ")).join(" ");
}

/** Seconds (the API's `idle_timeout_s`, a histogram's sums). */
export function seconds(s: number | null | undefined): string {
  return s === null || s === undefined ? "–" : duration(s * 1000);
}

/** Something a second: `0.5/s`, `12/s`, `1,204/s`. */
export function rate(perSecond: number, unit = ""): string {
  const shown =
    perSecond >= 100 ? Math.round(perSecond).toLocaleString("en") : trim(perSecond.toFixed(perSecond >= 10 ? 1 : 2));
  return `${shown}${unit ? ` ${unit}` : ""}/s`;
}

/** A count with thousands separators. */
export function count(n: number | null | undefined): string {
  return n === null || n === undefined ? "–" : n.toLocaleString("en", { maximumFractionDigits: 2 });
}

/** A fraction as a percentage: `66.7 %`. */
export function percent(fraction: number): string {
  return `${trim((fraction * 100).toFixed(1))} %`;
}

/** An instant relative to now: `12 s ago`, `in 5 min`, `just now`. */
export function ago(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return "–";
  const ms = now - Date.parse(iso);
  if (!Number.isFinite(ms)) return "–";
  if (Math.abs(ms) < 1000) return "just now";
  const span = duration(Math.abs(ms)).replace(/(\d+)\.\d+ s$/, "$1 s");
  return ms > 0 ? `${span} ago` : `in ${span}`;
}

/** An instant as local date and time, to the second. */
export function when(iso: string | null | undefined): string {
  return iso ? new Date(iso).toLocaleString("en-GB", { dateStyle: "short", timeStyle: "medium" }) : "–";
}

function trim(fixed: string): string {
  return fixed.includes(".") ? fixed.replace(/\.?0+$/, "") : fixed;
}
