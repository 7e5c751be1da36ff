/**
 * Readable tables for the two reports people read row by row: "Profile Training" (`tensorsight profile --json`: the
 * time per phase, the top functions, line timings) and "Check Shapes" (`tensorsight shapes --json`: one row per module
 * in execution order). Called by `readReport` (cliResults.ts) when it recognises such a document; the results view
 * (panel/resultsView.ts, media/webview/results.js) draws them.
 *
 * The Python tool writes the values as people read them (`f32[64, 8]`, `1.2 MiB`, `torch/nn/modules/linear.py:114`,
 * through `core.notation`), next to the raw numbers; here they get human column labels (English by default, the
 * results view passes translated ones), units, and the raw numbers as sort keys, so "Total time" sorts as time and
 * "Memory" as bytes. Pure: no editor API.
 */
import type { Cell, Table, ToolReport } from './cliResults';

/** Every label these tables show, as `l10n.t` templates (`{0}` is filled in). */
export const ENGLISH_LABELS = {
  stepsProfiled: 'Steps profiled',
  warmupSteps: 'Warm-up steps',
  wallTime: 'Wall time',
  timePerStep: 'Time per step',
  timePerStepProfiled: 'Time per step under cProfile',
  slowerValue: '{0} ({1}× slower)',
  note: 'Note',
  phasesTitle: 'Time per phase',
  phasesNote: 'Mean over {0} steps, measured under cProfile.',
  phasesNoteUnprofiled: 'Mean over {0} steps run without the profiler, as the training loop code lens measures them.',
  phase: 'Phase',
  perStep: 'Per step',
  share: 'Share',
  phaseData: 'Data loading',
  phaseForward: 'Forward',
  phaseBackward: 'Backward',
  phaseOptimizer: 'Optimizer step',
  phaseOther: 'Other',
  wholeStep: 'Whole step',
  functionsTitle: 'Top functions',
  functionsNote: 'Times summed over the {0} profiled steps; bold rows are your code. Click a row to open its source.',
  functionsNoteSlowed:
    'Times summed over the {0} profiled steps, under cProfile: {1}× slower than without; bold rows are your code. Click a row to open its source.',
  function: 'Function',
  location: 'Location',
  ownTime: 'Own time',
  totalTime: 'Total time',
  calls: 'Calls',
  linesTitle: 'Line timings of {0}',
  line: 'Line',
  hits: 'Hits',
  time: 'Time',
  perHit: 'Per hit',
  source: 'Source',
  model: 'Model',
  shapeMapTitle: 'Shape map of {0}',
  shapeMapNote: 'Modules in the order the forward ran them. Click a row to open the line that called the module.',
  module: 'Module',
  inputShapes: 'Input shapes',
  outputShape: 'Output shape',
  parameters: 'Parameters',
  memory: 'Memory',
  batchMemory: 'Memory for this batch',
  parametersValue: '{0} ({1} trainable)',
  verdict: 'Verdict',
  overfitPassed: 'Passed: the loss approached zero',
  overfitFailed: 'Failed: the loss did not approach zero',
  loss: 'Loss',
  lossOnBatch: 'Loss on the batch',
  lossChange: '{0} → {1} (best {2})',
  trainingSteps: 'Training steps',
  samples: 'Samples',
  learningRate: 'Learning rate (Adam)',
  details: 'Details',
  overfitWhereTitle: 'Model and loss',
  overfitWhereNote: 'Where the script calls its model and computes its loss. Click a row to open its source.',
  what: 'What',
  overfitError: 'Could not run the check',
};

export type ReportLabels = typeof ENGLISH_LABELS;

type Row = Record<string, unknown>;

export function isProfileDocument(document: Record<string, unknown>): boolean {
  return typeof document.steps_profiled === 'number' && Array.isArray(document.rows);
}

export function isShapeMapDocument(document: Record<string, unknown>): boolean {
  return (
    Array.isArray(document.rows) &&
    'model' in document &&
    document.rows.every((row) => isRow(row) && 'output_shapes' in row)
  );
}

/** `python -m tensorsight overfit --json`: says so (`tool`), or (older helpers) has the verdict's fields. */
export function isOverfitDocument(document: Record<string, unknown>): boolean {
  return document.tool === 'overfit' || ('initial_loss' in document && 'passed' in document);
}

/** The overfit result as labelled lines (never the document's keys) and a table of where the model and loss are. */
export function overfitReport(document: Record<string, unknown>, labels: ReportLabels): ToolReport {
  const summary: Array<[string, Cell]> = [];
  if (typeof document.passed === 'boolean')
    summary.push([labels.verdict, document.passed ? labels.overfitPassed : labels.overfitFailed]);
  const model = placed(document, 'model');
  if (model) summary.push([labels.model, model]);
  const loss = placed(document, 'loss');
  if (loss) summary.push([labels.loss, loss]);
  if (typeof document.initial_loss === 'number') {
    summary.push([
      labels.lossOnBatch,
      fill(
        labels.lossChange,
        lossText(document.initial_loss),
        lossText(document.final_loss),
        lossText(document.best_loss),
      ),
    ]);
    summary.push([labels.trainingSteps, num(document.steps)]);
    summary.push([labels.samples, num(document.samples)]);
    summary.push([labels.learningRate, str(document.lr)]);
  }
  if (typeof document.message === 'string' && document.message) summary.push([labels.details, document.message]);
  const rows: Cell[][] = [];
  const locations: Array<{ file: string; line: number } | null> = [];
  for (const [key, label] of [
    ['model', labels.model],
    ['loss', labels.loss],
  ] as const) {
    const where = location({ file: document[`${key}_file`], line: document[`${key}_line`] });
    if (!where) continue;
    rows.push([label, str(document[key]), `${baseName(where.file)}:${where.line}`]);
    locations.push(where);
  }
  const tables: Table[] = rows.length
    ? [
        {
          name: 'overfit-where',
          title: labels.overfitWhereTitle,
          note: labels.overfitWhereNote,
          columns: [labels.what, labels.function, labels.location],
          rows,
          locations,
        },
      ]
    : [];
  const report = withError({ findings: [], tables, summary }, document);
  return report.error ? { ...report, errorTitle: labels.overfitError } : report;
}

function placed(document: Row, key: string): string {
  const name = str(document[key]);
  const where = location({ file: document[`${key}_file`], line: document[`${key}_line`] });
  return name && where ? `${name} (${baseName(where.file)}:${where.line})` : name;
}

function lossText(value: unknown): string {
  return typeof value === 'number' ? (Number.isFinite(value) ? value.toPrecision(4) : String(value)) : '';
}

function baseName(file: string): string {
  return file.split(/[\\/]/).pop() ?? file;
}

export function profileReport(document: Record<string, unknown>, labels: ReportLabels): ToolReport {
  const steps = num(document.steps_profiled);
  const wall = num(document.wall_s);
  const summary: Array<[string, Cell]> = [
    [labels.stepsProfiled, steps],
    [labels.warmupSteps, num(document.warmup)],
    [labels.wallTime, formatSeconds(wall)],
  ];
  // the step's time without the profiler (what the code lens shows), then under it; an older document has only the
  // profiled steps' wall time
  const plainMs = typeof document.ms_per_step === 'number' ? document.ms_per_step : undefined;
  const slowdown = typeof document.slowdown === 'number' ? document.slowdown : undefined;
  if (plainMs !== undefined) summary.push([labels.timePerStep, formatMs(plainMs)]);
  if (steps > 0) {
    const profiledMs = formatMs((wall * 1000) / steps);
    if (plainMs === undefined) summary.push([labels.timePerStep, profiledMs]);
    else
      summary.push([
        labels.timePerStepProfiled,
        slowdown === undefined ? profiledMs : fill(labels.slowerValue, profiledMs, slowdown.toFixed(1)),
      ]);
  }
  for (const note of Array.isArray(document.notes) ? document.notes : []) summary.push([labels.note, str(note)]);
  const tables: Table[] = [];
  const phases = isRow(document.phases) ? document.phases : undefined;
  if (phases && Array.isArray(phases.breakdown)) tables.push(phaseTable(phases, labels));
  const rows = (document.rows as unknown[]).filter(isRow);
  if (rows.length) tables.push(functionTable(rows, steps, slowdown, labels));
  for (const entry of Array.isArray(document.functions) ? document.functions.filter(isRow) : [])
    tables.push(lineTable(entry, labels));
  return withError({ findings: [], tables, summary }, document);
}

export function shapeMapReport(document: Record<string, unknown>, labels: ReportLabels): ToolReport {
  const rows = (document.rows as unknown[]).filter(isRow);
  const model = str(document.model);
  const summary: Array<[string, Cell]> = [[labels.model, model]];
  const totals = isRow(document.totals) ? document.totals : undefined;
  if (totals) {
    summary.push([labels.parameters, fill(labels.parametersValue, count(totals.params), count(totals.trainable))]);
    summary.push([labels.batchMemory, str(totals.memory_text)]);
  }
  const tables: Table[] = [];
  if (rows.length) {
    tables.push({
      name: 'modules',
      title: fill(labels.shapeMapTitle, model),
      note: labels.shapeMapNote,
      columns: [labels.module, labels.inputShapes, labels.outputShape, labels.parameters, labels.memory],
      rows: rows.map((row) => [
        // one non-breaking space pair per level: a child reads under its parent
        '\u00a0\u00a0'.repeat(Math.max(0, num(row.depth))) + (str(row.module) || str(row.path) || str(row.type)),
        text(row.input_text, row.input_shapes),
        text(row.output_text, row.output_shapes),
        count(row.params),
        text(row.memory_text, row.memory_bytes),
      ]),
      sortKeys: rows.map((row, index) => [
        index,
        str(row.input_text),
        str(row.output_text),
        num(row.params),
        num(row.memory_bytes),
      ]),
      numericColumns: [3, 4],
      locations: rows.map(location),
    });
  }
  return withError({ findings: [], tables, summary }, document);
}

function phaseTable(phases: Row, labels: ReportLabels): Table {
  const names: Record<string, string> = {
    data: labels.phaseData,
    forward: labels.phaseForward,
    backward: labels.phaseBackward,
    optimizer: labels.phaseOptimizer,
    other: labels.phaseOther,
  };
  const records = (phases.breakdown as unknown[]).filter(isRow);
  const totalMs = records.reduce((sum, record) => sum + num(record.ms_per_step), 0);
  const rows: Cell[][] = records.map((record) => [
    names[str(record.phase)] ?? str(record.phase),
    formatMs(num(record.ms_per_step)),
    formatPercent(num(record.percent)),
  ]);
  const sortKeys: Cell[][] = records.map((record, index) => [index, num(record.ms_per_step), num(record.percent)]);
  rows.push([labels.wholeStep, formatMs(totalMs), formatPercent(totalMs > 0 ? 100 : 0)]);
  sortKeys.push([records.length, totalMs, 100]);
  const where = location(phases);
  return {
    name: 'phases',
    title: labels.phasesTitle,
    note: fill(phases.profiler_off === true ? labels.phasesNoteUnprofiled : labels.phasesNote, num(phases.steps)),
    columns: [labels.phase, labels.perStep, labels.share],
    rows,
    sortKeys,
    numericColumns: [1, 2],
    ...(where ? { locations: rows.map(() => where) } : {}),
  };
}

function functionTable(rows: Row[], steps: number, slowdown: number | undefined, labels: ReportLabels): Table {
  return {
    name: 'functions',
    title: labels.functionsTitle,
    note:
      slowdown === undefined
        ? fill(labels.functionsNote, steps)
        : fill(labels.functionsNoteSlowed, steps, slowdown.toFixed(1)),
    columns: [labels.function, labels.location, labels.ownTime, labels.totalTime, labels.calls],
    rows: rows.map((row) => [
      str(row.label) || str(row.function),
      str(row.location) || str(row.file),
      formatMs(num(row.own_s) * 1000),
      formatMs(num(row.cumulative_s) * 1000),
      count(row.calls),
    ]),
    sortKeys: rows.map((row) => [
      str(row.label) || str(row.function),
      str(row.location),
      num(row.own_s),
      num(row.cumulative_s),
      num(row.calls),
    ]),
    numericColumns: [2, 3, 4],
    locations: rows.map(location),
    highlight: rows.map((row) => row.user === true),
  };
}

function lineTable(entry: Row, labels: ReportLabels): Table {
  const lines = (Array.isArray(entry.lines) ? entry.lines : []).filter(isRow);
  const file = str(entry.file);
  return {
    name: `lines:${str(entry.function)}`,
    title: fill(labels.linesTitle, str(entry.function)),
    note: str(entry.location),
    columns: [labels.line, labels.hits, labels.time, labels.perHit, '%', labels.source],
    rows: lines.map((line) => [
      num(line.line),
      count(line.hits),
      formatMs(num(line.time_s) * 1000),
      formatMicroseconds(num(line.per_hit_s) * 1e6),
      formatPercent(num(line.percent)),
      str(line.source),
    ]),
    sortKeys: lines.map((line) => [
      num(line.line),
      num(line.hits),
      num(line.time_s),
      num(line.per_hit_s),
      num(line.percent),
      str(line.source),
    ]),
    numericColumns: [0, 1, 2, 3, 4],
    locations: lines.map((line) => (file ? { file, line: num(line.line) || 1 } : null)),
  };
}

/** `0.05 ms`, `4.30 ms`, `48.4 ms`, `1,234 ms`: three significant figures, at most two decimals. */
export function formatMs(ms: number): string {
  const digits = ms >= 100 ? 0 : ms >= 10 ? 1 : 2;
  return `${ms.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })} ms`;
}

export function formatSeconds(seconds: number): string {
  return `${seconds.toFixed(seconds >= 100 ? 0 : 2)} s`;
}

function formatMicroseconds(us: number): string {
  return `${us.toLocaleString('en-US', { maximumFractionDigits: us >= 100 ? 0 : 1 })} µs`;
}

/** `63%`, `0.4%`, `0%`. */
export function formatPercent(percent: number): string {
  if (percent > 0 && percent < 1) return `${percent.toFixed(1)}%`;
  return `${percent.toFixed(0)}%`;
}

/** `1,474`: integers with thousands separators, as the terminal table writes them. */
function count(value: unknown): string {
  return num(value).toLocaleString('en-US', { maximumFractionDigits: 0 });
}

export function fill(template: string, ...args: Array<string | number>): string {
  return template.replace(/\{(\d+)\}/g, (whole, index: string) => {
    const value = args[Number(index)];
    return value === undefined ? whole : String(value);
  });
}

function withError(report: ToolReport, document: Record<string, unknown>): ToolReport {
  return typeof document.error === 'string' && document.error ? { ...report, error: document.error } : report;
}

function location(record: Row): { file: string; line: number } | null {
  return typeof record.file === 'string' && record.file
    ? { file: record.file, line: typeof record.line === 'number' && record.line >= 1 ? record.line : 1 }
    : null;
}

/** The tool's readable text, or (from older helpers without it) the raw value as compact JSON. */
function text(readable: unknown, raw: unknown): string {
  return typeof readable === 'string' ? readable : JSON.stringify(raw ?? null);
}

function str(value: unknown): string {
  if (typeof value === 'string') return value;
  return typeof value === 'number' || typeof value === 'boolean' ? String(value) : '';
}

function num(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : 0;
}

function isRow(value: unknown): value is Row {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
