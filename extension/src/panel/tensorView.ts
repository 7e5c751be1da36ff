/**
 * View Tensor's pure half: the evaluate expression, decoding and validating the agent's JSON (viewer.py's payload),
 * the colour of every heatmap cell and image pixel (NaN, +Inf, -Inf and empty cells in colours of their own), the
 * histogram on a log scale, and the comparison with the previous stop. No editor API, so every rule is unit-tested
 * (tests/extension/tensorView.test.ts); panel/tensorViewer.ts calls it and posts the result to the webview
 * (media/webview/tensor.js), which only draws.
 */

/** Cell marks, as viewer.py writes them. */
export const MARK = { finite: 0, nan: 1, posinf: 2, neginf: 3, empty: 4 } as const;

export type Rgba = readonly [number, number, number, number];

/** Colours of the cells that hold no finite value; also the legend's. */
export const MARK_COLOURS: Record<'nan' | 'posinf' | 'neginf' | 'empty', Rgba> = {
  nan: [255, 0, 255, 255], // magenta: on no sequential or diverging map
  posinf: [255, 59, 48, 255], // red
  neginf: [0, 229, 255, 255], // cyan
  empty: [128, 128, 128, 96], // padding / no value
};

export interface ViewMeta {
  shape: number[];
  dtype: string;
  device: string;
  library: string;
  elements: number;
}

export interface ViewCounts {
  nan: number;
  posinf: number;
  neginf: number;
  zero: number;
  finite: number;
}

export interface ViewStats {
  min: number | null;
  max: number | null;
  mean: number | null;
  std: number | null;
}

export interface Histogram {
  edges: number[];
  counts: number[];
}

/** A pooled 2-D grid: each cell is the mean of a blockRows x blockCols block of the source. */
export interface Grid {
  rows: number;
  cols: number;
  blockRows: number;
  blockCols: number;
  sourceRows: number;
  sourceCols: number;
  values: Array<Array<number | null>>;
  marks: number[][];
}

export interface ImageChannel extends Grid {
  low: number;
  high: number;
}

export interface ImageSet {
  layout: string;
  normalize: string;
  count: number;
  shown: number;
  images: Array<{ channels: ImageChannel[] }>;
}

export interface LinePicture {
  points: number;
  bucket: number;
  length: number;
  marks: number[];
  min: Array<number | null>;
  max: Array<number | null>;
}

interface Values {
  meta: ViewMeta;
  counts: ViewCounts;
  stats: ViewStats;
  histogram: Histogram;
}

export type TensorPayload =
  | (Values & { kind: 'scalar' })
  | (Values & { kind: 'line'; line: LinePicture })
  | (Values & { kind: 'heatmap'; slice: number[]; heatmap: Grid })
  | (Values & { kind: 'image'; image: ImageSet });

export type ViewPayload = TensorPayload | { kind: 'message'; message: string; meta: Partial<ViewMeta> };

/** Raised on an answer that is not a viewer payload; the message says where it went wrong. */
export class PayloadError extends Error {}

/** The normalisations of image channels viewer.py knows. */
export type Normalize = 'channel' | 'global';

/**
 * The Python expression evaluated at the stop. `__import__('tensorsight')` reaches the agent even where the program
 * shadows the builtin `tensorsight`; the user's expression is parenthesised, so `a + b` views the sum.
 */
export function viewExpression(
  expression: string,
  index: readonly number[] = [],
  normalize: Normalize = 'channel',
): string {
  const args = [`(${expression.trim()})`];
  if (index.length > 0) args.push(`index=[${index.map((i) => String(Math.trunc(i))).join(', ')}]`);
  if (normalize !== 'channel') args.push(`normalize='${normalize}'`);
  return `__import__('tensorsight').view_tensor(${args.join(', ')})`;
}

/**
 * The expression to view from a Variables or Watch context-menu argument: VS Code passes `{variable: {evaluateName}}`
 * from Variables and the watch expression (a string, or an object with `evaluateName` or `name`) from Watch.
 */
export function expressionFromMenuArgument(argument: unknown): string | undefined {
  const text = (value: unknown): string | undefined =>
    typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
  if (typeof argument !== 'object' || argument === null) return text(argument);
  const record = argument as Record<string, unknown>;
  for (const key of ['variable', 'expression']) {
    const inner = record[key];
    if (typeof inner === 'object' && inner !== null) {
      const found = expressionFromMenuArgument(inner);
      if (found) return found;
    } else if (text(inner)) {
      return text(inner);
    }
  }
  return text(record.evaluateName) ?? text(record.name);
}

/**
 * A Python `repr` of a str (what debugpy answers an evaluate with) as the string itself. Raises PayloadError when the
 * answer is not a quoted string, e.g. a debuggee that printed something else.
 */
export function decodePythonString(repr: string): string {
  const text = repr.trim();
  const quote = text[0];
  if (text.length < 2 || (quote !== "'" && quote !== '"') || text[text.length - 1] !== quote) {
    throw new PayloadError(`expected a Python string, got: ${text.slice(0, 120)}`);
  }
  const body = text.slice(1, -1);
  let out = '';
  for (let i = 0; i < body.length; i++) {
    const ch = body[i];
    if (ch !== '\\') {
      out += ch;
      continue;
    }
    const next = body[++i];
    const hex = (width: number): string => {
      const digits = body.slice(i + 1, i + 1 + width);
      if (!/^[0-9a-fA-F]+$/.test(digits) || digits.length !== width) {
        throw new PayloadError(`bad escape \\${next ?? ''}${digits} in the Python string`);
      }
      i += width;
      return String.fromCodePoint(parseInt(digits, 16));
    };
    switch (next) {
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'x':
        out += hex(2);
        break;
      case 'u':
        out += hex(4);
        break;
      case 'U':
        out += hex(8);
        break;
      case '\\':
      case "'":
      case '"':
        out += next;
        break;
      default:
        throw new PayloadError(`bad escape \\${next ?? ''} in the Python string`);
    }
  }
  return out;
}

/** The evaluate answer (a Python str repr holding JSON) as a checked payload. */
export function parseEvaluateResult(result: string): ViewPayload {
  const json = decodePythonString(result);
  let data: unknown;
  try {
    data = JSON.parse(json);
  } catch (error) {
    throw new PayloadError(`the answer is not JSON: ${String(error)}`);
  }
  return parseViewPayload(data);
}

function fail(path: string, expected: string, value: unknown): never {
  const shown = JSON.stringify(value);
  throw new PayloadError(`${path}: expected ${expected}, got ${shown === undefined ? 'nothing' : shown.slice(0, 60)}`);
}

function object(value: unknown, path: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) fail(path, 'an object', value);
  return value as Record<string, unknown>;
}

function number(value: unknown, path: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) fail(path, 'a number', value);
  return value;
}

function count(value: unknown, path: string): number {
  const n = number(value, path);
  if (!Number.isInteger(n) || n < 0) fail(path, 'a count', value);
  return n;
}

function nullableNumber(value: unknown, path: string): number | null {
  return value === null ? null : number(value, path);
}

function string(value: unknown, path: string): string {
  if (typeof value !== 'string') fail(path, 'a string', value);
  return value;
}

function array(value: unknown, path: string, length?: number): unknown[] {
  if (!Array.isArray(value)) fail(path, 'an array', value);
  if (length !== undefined && value.length !== length) fail(path, `${length} items`, `${value.length} items`);
  return value;
}

function mark(value: unknown, path: string): number {
  const m = count(value, path);
  if (m > MARK.empty) fail(path, 'a cell mark 0..4', value);
  return m;
}

function parseMeta(value: unknown, path: string): ViewMeta {
  const meta = object(value, path);
  return {
    shape: array(meta.shape, `${path}.shape`).map((d, i) => count(d, `${path}.shape[${i}]`)),
    dtype: string(meta.dtype, `${path}.dtype`),
    device: string(meta.device, `${path}.device`),
    library: string(meta.library, `${path}.library`),
    elements: count(meta.elements, `${path}.elements`),
  };
}

function parseGrid(value: unknown, path: string): Grid {
  const grid = object(value, path);
  const rows = count(grid.rows, `${path}.rows`);
  const cols = count(grid.cols, `${path}.cols`);
  const values = array(grid.values, `${path}.values`, rows).map((row, r) =>
    array(row, `${path}.values[${r}]`, cols).map((v, c) => nullableNumber(v, `${path}.values[${r}][${c}]`)),
  );
  const marks = array(grid.marks, `${path}.marks`, rows).map((row, r) =>
    array(row, `${path}.marks[${r}]`, cols).map((m, c) => mark(m, `${path}.marks[${r}][${c}]`)),
  );
  return {
    rows,
    cols,
    blockRows: count(grid.blockRows, `${path}.blockRows`),
    blockCols: count(grid.blockCols, `${path}.blockCols`),
    sourceRows: count(grid.sourceRows, `${path}.sourceRows`),
    sourceCols: count(grid.sourceCols, `${path}.sourceCols`),
    values,
    marks,
  };
}

function parseLine(value: unknown, path: string): LinePicture {
  const line = object(value, path);
  const points = count(line.points, `${path}.points`);
  return {
    points,
    bucket: count(line.bucket, `${path}.bucket`),
    length: count(line.length, `${path}.length`),
    marks: array(line.marks, `${path}.marks`, points).map((m, i) => mark(m, `${path}.marks[${i}]`)),
    min: array(line.min, `${path}.min`, points).map((v, i) => nullableNumber(v, `${path}.min[${i}]`)),
    max: array(line.max, `${path}.max`, points).map((v, i) => nullableNumber(v, `${path}.max[${i}]`)),
  };
}

function parseImages(value: unknown, path: string): ImageSet {
  const set = object(value, path);
  const images = array(set.images, `${path}.images`).map((image, b) => {
    const channels = array(object(image, `${path}.images[${b}]`).channels, `${path}.images[${b}].channels`);
    if (channels.length === 0) fail(`${path}.images[${b}].channels`, 'at least one channel', channels);
    return {
      channels: channels.map((channel, c) => {
        const where = `${path}.images[${b}].channels[${c}]`;
        const grid = parseGrid(channel, where);
        const raw = object(channel, where);
        return { ...grid, low: number(raw.low, `${where}.low`), high: number(raw.high, `${where}.high`) };
      }),
    };
  });
  return {
    layout: string(set.layout, `${path}.layout`),
    normalize: string(set.normalize, `${path}.normalize`),
    count: count(set.count, `${path}.count`),
    shown: count(set.shown, `${path}.shown`),
    images,
  };
}

/** Checks an already-decoded JSON value against viewer.py's payload; raises PayloadError naming the bad field. */
export function parseViewPayload(data: unknown): ViewPayload {
  const root = object(data, 'payload');
  const kind = root.kind;
  if (kind === 'message') {
    const raw = root.meta === undefined ? {} : object(root.meta, 'payload.meta');
    const meta: Partial<ViewMeta> = {}; // a message may come before the meta is complete: keep what is well formed
    if (Array.isArray(raw.shape) && raw.shape.every((d) => Number.isInteger(d))) meta.shape = raw.shape as number[];
    for (const key of ['dtype', 'device', 'library'] as const) {
      const value = raw[key];
      if (typeof value === 'string') meta[key] = value;
    }
    return { kind, message: string(root.message, 'payload.message'), meta };
  }
  if (kind !== 'scalar' && kind !== 'line' && kind !== 'heatmap' && kind !== 'image') {
    fail('payload.kind', 'scalar, line, heatmap, image or message', kind);
  }
  const c = object(root.counts, 'payload.counts');
  const s = object(root.stats, 'payload.stats');
  const h = object(root.histogram, 'payload.histogram');
  const edges = array(h.edges, 'payload.histogram.edges').map((e, i) => number(e, `payload.histogram.edges[${i}]`));
  const counts = array(h.counts, 'payload.histogram.counts', Math.max(0, edges.length - 1)).map((n, i) =>
    count(n, `payload.histogram.counts[${i}]`),
  );
  const values: Values = {
    meta: parseMeta(root.meta, 'payload.meta'),
    counts: {
      nan: count(c.nan, 'payload.counts.nan'),
      posinf: count(c.posinf, 'payload.counts.posinf'),
      neginf: count(c.neginf, 'payload.counts.neginf'),
      zero: count(c.zero, 'payload.counts.zero'),
      finite: count(c.finite, 'payload.counts.finite'),
    },
    stats: {
      min: nullableNumber(s.min, 'payload.stats.min'),
      max: nullableNumber(s.max, 'payload.stats.max'),
      mean: nullableNumber(s.mean, 'payload.stats.mean'),
      std: nullableNumber(s.std, 'payload.stats.std'),
    },
    histogram: { edges, counts },
  };
  switch (kind) {
    case 'scalar':
      return { ...values, kind };
    case 'line':
      return { ...values, kind, line: parseLine(root.line, 'payload.line') };
    case 'heatmap':
      return {
        ...values,
        kind,
        slice: array(root.slice, 'payload.slice').map((i, n) => count(i, `payload.slice[${n}]`)),
        heatmap: parseGrid(root.heatmap, 'payload.heatmap'),
      };
    case 'image':
      return { ...values, kind, image: parseImages(root.image, 'payload.image') };
  }
}

// --- colours -------------------------------------------------------------------------------------------------------

/** Viridis at 9 stops: perceptually even, readable in dark and light themes, and clear of the mark colours. */
const VIRIDIS: ReadonlyArray<readonly [number, number, number]> = [
  [68, 1, 84],
  [72, 40, 120],
  [62, 74, 137],
  [49, 104, 142],
  [38, 130, 142],
  [31, 158, 137],
  [53, 183, 121],
  [110, 206, 88],
  [253, 231, 37],
];

/** The colour of `t` in [0, 1] on the sequential map (clamped). */
export function sequentialColour(t: number): Rgba {
  const x = Math.min(1, Math.max(0, Number.isFinite(t) ? t : 0)) * (VIRIDIS.length - 1);
  const i = Math.min(VIRIDIS.length - 2, Math.floor(x));
  const f = x - i;
  const a = VIRIDIS[i] ?? [0, 0, 0];
  const b = VIRIDIS[i + 1] ?? a;
  return [
    Math.round(a[0] + (b[0] - a[0]) * f),
    Math.round(a[1] + (b[1] - a[1]) * f),
    Math.round(a[2] + (b[2] - a[2]) * f),
    255,
  ];
}

/** The colour of a cell holding no finite value, or undefined for a finite cell. */
export function markColour(cellMark: number): Rgba | undefined {
  switch (cellMark) {
    case MARK.nan:
      return MARK_COLOURS.nan;
    case MARK.posinf:
      return MARK_COLOURS.posinf;
    case MARK.neginf:
      return MARK_COLOURS.neginf;
    case MARK.empty:
      return MARK_COLOURS.empty;
    default:
      return undefined;
  }
}

/** A heatmap cell's colour: its mark's colour, else its value on the map between low and high. */
export function cellColour(value: number | null, cellMark: number, low: number, high: number): Rgba {
  const special = markColour(cellMark);
  if (special) return special;
  if (value === null) return MARK_COLOURS.empty;
  return sequentialColour(high > low ? (value - low) / (high - low) : 0.5);
}

/** The finite range of a grid's values, or [0, 1] when it holds none. */
export function valueRange(values: ReadonlyArray<ReadonlyArray<number | null>>): [number, number] {
  let low = Infinity;
  let high = -Infinity;
  for (const row of values) {
    for (const v of row) {
      if (v === null) continue;
      if (v < low) low = v;
      if (v > high) high = v;
    }
  }
  return low <= high ? [low, high] : [0, 1];
}

/** RGBA bytes of a heatmap, row by row (what the webview puts into an ImageData). */
export function heatmapRgba(grid: Grid): { rgba: Uint8ClampedArray; low: number; high: number } {
  const [low, high] = valueRange(grid.values);
  const rgba = new Uint8ClampedArray(grid.rows * grid.cols * 4);
  for (let r = 0; r < grid.rows; r++) {
    for (let c = 0; c < grid.cols; c++) {
      rgba.set(
        cellColour(grid.values[r]?.[c] ?? null, grid.marks[r]?.[c] ?? MARK.empty, low, high),
        (r * grid.cols + c) * 4,
      );
    }
  }
  return { rgba, low, high };
}

/**
 * RGBA bytes of one image: one channel is grey, three are RGB, four are RGBA, each scaled by its own low..high (the
 * agent already made those global under `normalize="global"`). A pixel with a NaN/Inf in any channel takes that mark's
 * colour, so a NaN in a picture is never drawn as black.
 */
export function imageRgba(channels: readonly ImageChannel[]): Uint8ClampedArray {
  const first = channels[0];
  if (!first) return new Uint8ClampedArray(0);
  const { rows, cols } = first;
  const rgba = new Uint8ClampedArray(rows * cols * 4);
  const level = (ch: ImageChannel, r: number, c: number): number => {
    const v = ch.values[r]?.[c] ?? null;
    if (v === null) return 0;
    return Math.round(255 * (ch.high > ch.low ? Math.min(1, Math.max(0, (v - ch.low) / (ch.high - ch.low))) : 0.5));
  };
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      const at = (r * cols + c) * 4;
      const worst = channels
        .map((ch) => ch.marks[r]?.[c] ?? MARK.empty)
        .find((m) => m !== MARK.finite && m !== MARK.empty);
      const special = worst === undefined ? undefined : markColour(worst);
      if (special) {
        rgba.set(special, at);
        continue;
      }
      const levels = channels.map((ch) => level(ch, r, c));
      const grey = levels[0] ?? 0;
      rgba.set(
        channels.length >= 3
          ? [levels[0] ?? 0, levels[1] ?? 0, levels[2] ?? 0, channels.length >= 4 ? (levels[3] ?? 255) : 255]
          : [grey, grey, grey, 255],
        at,
      );
    }
  }
  return rgba;
}

/** A diverging map for differences: blue below zero, white at zero, red above; `t` in [-1, 1]. */
export function divergingColour(t: number): Rgba {
  const x = Math.min(1, Math.max(-1, Number.isFinite(t) ? t : 0));
  const fade = (full: number) => Math.round(255 + (full - 255) * Math.abs(x));
  return x >= 0 ? [fade(178), fade(24), fade(43), 255] : [fade(33), fade(102), fade(172), 255];
}

// --- histogram -----------------------------------------------------------------------------------------------------

/** A bar's height in [0, 1] on a log scale: log(1 + count) / log(1 + largest); 0 for an empty bin. */
export function logHeight(binCount: number, largest: number): number {
  if (binCount <= 0 || largest <= 0) return 0;
  return Math.log1p(binCount) / Math.log1p(largest);
}

export interface HistogramBar {
  /** left and right edges as fractions of the drawn value range */
  x0: number;
  x1: number;
  /** log-scaled height in [0, 1] */
  height: number;
  count: number;
  from: number;
  to: number;
}

export interface SpecialCount {
  key: 'zero' | 'nan' | 'posinf' | 'neginf';
  count: number;
  /** the previous stop's count, when there is one */
  previous?: number;
}

export interface HistogramView {
  low: number;
  high: number;
  bars: HistogramBar[];
  /** the previous stop's bars on the same axes (same range and height scale), drawn as an outline */
  previous?: HistogramBar[];
  specials: SpecialCount[];
}

function bars(histogram: Histogram, low: number, high: number, largest: number): HistogramBar[] {
  const span = high > low ? high - low : 1;
  return histogram.counts.map((n, i) => {
    const from = histogram.edges[i] ?? low;
    const to = histogram.edges[i + 1] ?? from;
    return { x0: (from - low) / span, x1: (to - low) / span, height: logHeight(n, largest), count: n, from, to };
  });
}

function edgeRange(histogram: Histogram): [number, number] | undefined {
  const first = histogram.edges[0];
  const last = histogram.edges[histogram.edges.length - 1];
  return first === undefined || last === undefined ? undefined : [first, last];
}

/**
 * The histogram to draw, with the previous stop's on the same axes: both ranges joined, one log scale for both, and
 * the zero/NaN/+Inf/-Inf counts side by side. The bins of two stops rarely share edges (min and max move), so the
 * comparison is by overlay, never by subtracting bins.
 */
export function histogramView(current: TensorPayload, previous?: TensorPayload): HistogramView {
  const ranges = [edgeRange(current.histogram), previous ? edgeRange(previous.histogram) : undefined].filter(
    (r): r is [number, number] => r !== undefined,
  );
  const low = ranges.length ? Math.min(...ranges.map((r) => r[0])) : 0;
  const high = ranges.length ? Math.max(...ranges.map((r) => r[1])) : 1;
  const largest = Math.max(0, ...current.histogram.counts, ...(previous?.histogram.counts ?? []));
  const keys: Array<SpecialCount['key']> = ['zero', 'nan', 'posinf', 'neginf'];
  return {
    low,
    high,
    bars: bars(current.histogram, low, high, largest),
    ...(previous ? { previous: bars(previous.histogram, low, high, largest) } : {}),
    specials: keys.map((key) => ({
      key,
      count: current.counts[key],
      ...(previous ? { previous: previous.counts[key] } : {}),
    })),
  };
}

// --- since the last stop -------------------------------------------------------------------------------------------

export interface HeatmapDiff {
  rows: number;
  cols: number;
  /** current minus previous, where both cells are finite; null elsewhere */
  delta: Array<Array<number | null>>;
  /** the largest |delta|, the scale of the diverging map */
  largest: number;
  /** cells whose mark changed (e.g. finite -> NaN) */
  changedMarks: number;
  rgba: Uint8ClampedArray;
}

/** The heatmap of previous-to-current changes, when both stops pooled the same slice the same way; else undefined. */
export function heatmapDiff(current: TensorPayload, previous: TensorPayload | undefined): HeatmapDiff | undefined {
  if (!previous || current.kind !== 'heatmap' || previous.kind !== 'heatmap') return undefined;
  const a = previous.heatmap;
  const b = current.heatmap;
  const same =
    a.rows === b.rows &&
    a.cols === b.cols &&
    a.blockRows === b.blockRows &&
    a.blockCols === b.blockCols &&
    a.sourceRows === b.sourceRows &&
    a.sourceCols === b.sourceCols &&
    current.slice.join() === previous.slice.join() &&
    current.meta.shape.join() === previous.meta.shape.join();
  if (!same) return undefined;
  let largest = 0;
  let changedMarks = 0;
  const delta = b.values.map((row, r) =>
    row.map((v, c) => {
      const before = a.values[r]?.[c] ?? null;
      if ((a.marks[r]?.[c] ?? MARK.empty) !== (b.marks[r]?.[c] ?? MARK.empty)) changedMarks++;
      if (v === null || before === null) return null;
      const d = v - before;
      largest = Math.max(largest, Math.abs(d));
      return d;
    }),
  );
  const rgba = new Uint8ClampedArray(b.rows * b.cols * 4);
  for (let r = 0; r < b.rows; r++) {
    for (let c = 0; c < b.cols; c++) {
      const d = delta[r]?.[c] ?? null;
      const nowMark = b.marks[r]?.[c] ?? MARK.empty;
      const colour =
        d !== null
          ? divergingColour(largest > 0 ? d / largest : 0)
          : (markColour(nowMark) ?? markColour(a.marks[r]?.[c] ?? MARK.empty) ?? MARK_COLOURS.empty);
      rgba.set(colour, (r * b.cols + c) * 4);
    }
  }
  return { rows: b.rows, cols: b.cols, delta, largest, changedMarks, rgba };
}

/**
 * The payloads viewed per (debug session, expression), and which stop each came from: the "previous" one is the
 * newest payload of an earlier stop, so re-viewing at the same stop (a refresh, another slice) keeps comparing with
 * the stop before rather than with itself.
 */
export class StopHistory {
  private readonly entries = new Map<string, { current: ViewEntry; previous?: ViewEntry }>();

  constructor(private readonly limit = 50) {}

  /** Records `payload` seen at `stop` and answers the previous stop's payload of the same expression, if any. */
  record(session: string, expression: string, stop: number, payload: TensorPayload): TensorPayload | undefined {
    const key = `${session}\u0000${expression}`;
    const entry = this.entries.get(key);
    let previous = entry?.previous;
    if (entry && entry.current.stop !== stop) previous = entry.current;
    this.entries.delete(key); // re-inserted last: the map's order is the eviction order
    this.entries.set(key, { current: { stop, payload }, ...(previous ? { previous } : {}) });
    while (this.entries.size > this.limit) this.entries.delete(this.entries.keys().next().value as string);
    return previous?.payload;
  }

  /** Forgets a debug session that ended. */
  forget(session: string): void {
    for (const key of [...this.entries.keys()]) if (key.startsWith(`${session}\u0000`)) this.entries.delete(key);
  }
}

interface ViewEntry {
  stop: number;
  payload: TensorPayload;
}

/** Leading dimensions a slice picker offers for a heatmap of a tensor of rank > 2: their sizes and the picked index. */
export function sliceDimensions(payload: TensorPayload): Array<{ size: number; index: number }> {
  if (payload.kind !== 'heatmap') return [];
  const lead = payload.meta.shape.slice(0, -2);
  return lead.map((size, i) => ({ size, index: payload.slice[i] ?? 0 }));
}

/** Base64 of bytes (RGBA buffers travel to the webview as text in postMessage's JSON). */
export function toBase64(bytes: Uint8ClampedArray): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}
