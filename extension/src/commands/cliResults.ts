/**
 * Pure readers for the JSON the `python -m tensorsight <tool> --json` commands print: the findings (shared model:
 * kind, severity, message, file, line, ...) and any tables (arrays of records), made ready for the Problems view and
 * the sortable results view. A profile or a shape map gets readable tables (reportTables.ts); any other document's
 * arrays of records are shown as they are.
 */
import {
  ENGLISH_LABELS,
  fill,
  isOverfitDocument,
  isProfileDocument,
  isShapeMapDocument,
  overfitReport,
  profileReport,
  type ReportLabels,
  shapeMapReport,
} from './reportTables';
import { parsePayload, type ReportedFinding } from '../server/protocol';

export type Severity = ReportedFinding['severity'];

/** A finding in the shared model, as the contract declares it (core/protocol/requests.py `ReportedFinding`). */
export type Finding = ReportedFinding;

/** The words a shown finding ends with, as templates (`step {0}`): the UI language's in the editor. */
export interface FindingLabels {
  step: string;
  rank: string;
}

export const ENGLISH_FINDING_LABELS: FindingLabels = { step: 'step {0}', rank: 'rank {0}' };

/**
 * A finding's message as a person reads it: the producer's words, then ` (step 12, rank 1)`. The step and the rank
 * are fields, never words of the message; this is the extension's one place that says them (the server's diagnostics
 * and the doctor's report do the same: pyhelpers/tensorsight/core/findings.py `finding_context`).
 */
export function findingText(finding: Finding, labels: FindingLabels = ENGLISH_FINDING_LABELS): string {
  const extras: string[] = [];
  if (finding.step != null) extras.push(fill(labels.step, finding.step));
  if (finding.rank != null) extras.push(fill(labels.rank, finding.rank));
  return extras.length ? `${finding.message} (${extras.join(', ')})` : finding.message;
}

export type Cell = string | number | boolean | null;

export interface Table {
  /** Stable id (the view keeps each table's sort under it). */
  name: string;
  /** Heading shown above the table (default: `name`) and a line under it. */
  title?: string;
  note?: string;
  columns: string[];
  rows: Cell[][];
  /** Index of the row's source file / line in `rows`, when the records carry them (jump-to-source). */
  fileColumn?: number;
  lineColumn?: number;
  /** Per row, where a click jumps (used instead of fileColumn/lineColumn when given). */
  locations?: Array<{ file: string; line: number } | null>;
  /** Per cell, the value a column sorts by when the shown text is not it (`12.3 ms` sorts as 0.0123). */
  sortKeys?: Cell[][];
  /** Columns drawn right-aligned (numbers with units). */
  numericColumns?: number[];
  /** Rows drawn in bold (the user's own code in a profile). */
  highlight?: boolean[];
}

export interface ToolReport {
  findings: Finding[];
  tables: Table[];
  /** Scalar top-level fields (e.g. overfit's final loss, a verdict), shown as a summary. */
  summary: Array<[string, Cell]>;
  error?: string;
  /** The words before `error` (default: the script stopped with an error). */
  errorTitle?: string;
  /** Set when the run was stopped before its end (`--timeout`, `--max-steps`, cancelled): the doctor's own words. */
  partial?: string;
}

/** The JSON document in a tool's stdout (the last line that parses as an object, or the whole text). */
export function parseToolOutput(stdout: string): Record<string, unknown> | undefined {
  const whole = tryParseObject(stdout.trim());
  if (whole) return whole;
  const start = stdout.indexOf('\n{');
  if (start >= 0) {
    const tail = tryParseObject(stdout.slice(start + 1).trim());
    if (tail) return tail;
  }
  const lines = stdout.trim().split(/\r?\n/).reverse();
  for (const line of lines) {
    const parsed = tryParseObject(line.trim());
    if (parsed) return parsed;
  }
  return undefined;
}

/**
 * The findings of a tool's JSON document, each read with the contract's parser (`parsePayload('ReportedFinding')`,
 * the rules the server applies to `tensorsight/toolFindings`): a malformed one (a severity outside the three, a line
 * before 1, a missing message) is dropped, as the server drops it.
 */
export function readFindings(document: Record<string, unknown>): Finding[] {
  const raw = document.findings;
  if (!Array.isArray(raw)) return [];
  const findings: Finding[] = [];
  for (const item of raw) {
    const parsed = parsePayload('ReportedFinding', item);
    if (parsed.ok && parsed.value.line >= 1) findings.push(parsed.value);
  }
  return findings;
}

const FILE_KEYS = ['file', 'filename', 'path'];
const LINE_KEYS = ['line', 'lineno', 'line_number'];

/**
 * Every top-level array of records except `findings`, as a table. Nested values (e.g. the shape map's
 * `input_shapes: [[32, 20]]`) become compact JSON text, so the cell still shows them.
 */
export function readTables(document: Record<string, unknown>): Table[] {
  const tables: Table[] = [];
  for (const [name, value] of Object.entries(document)) {
    if (name === 'findings' || !Array.isArray(value)) continue;
    const records = value.filter(isRecord);
    if (records.length === 0) continue;
    const columns: string[] = [];
    for (const record of records) {
      for (const key of Object.keys(record)) if (!columns.includes(key)) columns.push(key);
    }
    const rows = records.map((record) => columns.map((key) => toCell(record[key])));
    const fileColumn = columns.findIndex((c) => FILE_KEYS.includes(c));
    const lineColumn = columns.findIndex((c) => LINE_KEYS.includes(c));
    tables.push({
      name,
      columns,
      rows,
      ...(fileColumn >= 0 ? { fileColumn } : {}),
      ...(lineColumn >= 0 ? { lineColumn } : {}),
    });
  }
  return tables;
}

/** The report of a tool's document; `labels` are the readable tables' column labels (translated by the caller). */
export function readReport(document: Record<string, unknown>, labels: ReportLabels = ENGLISH_LABELS): ToolReport {
  if (isProfileDocument(document)) return profileReport(document, labels);
  if (isShapeMapDocument(document)) return shapeMapReport(document, labels);
  if (isOverfitDocument(document)) return overfitReport(document, labels);
  const summary: Array<[string, Cell]> = [];
  for (const [key, value] of Object.entries(document)) {
    if (key !== 'error' && isCell(value)) summary.push([key, value]);
  }
  const partial = isRecord(document.partial) ? document.partial.message : undefined;
  return {
    findings: readFindings(document),
    tables: readTables(document),
    summary,
    ...(typeof document.error === 'string' && document.error ? { error: document.error } : {}),
    ...(typeof partial === 'string' && partial ? { partial } : {}),
  };
}

/** Findings grouped by file, for one diagnostics entry per file. */
export function findingsByFile(findings: readonly Finding[]): Map<string, Finding[]> {
  const byFile = new Map<string, Finding[]>();
  for (const finding of findings) {
    const list = byFile.get(finding.file) ?? [];
    list.push(finding);
    byFile.set(finding.file, list);
  }
  return byFile;
}

/** True when argparse rejected the subcommand: the installed helpers do not ship that tool (yet). */
export function isMissingSubcommand(stderr: string, tool: string): boolean {
  return stderr.includes(`invalid choice: '${tool}'`);
}

const MAX_CELL_TEXT = 120;

function toCell(value: unknown): Cell {
  if (value === undefined) return null;
  if (isCell(value)) return value;
  const text = JSON.stringify(value);
  return text.length > MAX_CELL_TEXT ? `${text.slice(0, MAX_CELL_TEXT - 1)}…` : text;
}

function tryParseObject(text: string): Record<string, unknown> | undefined {
  if (!text.startsWith('{')) return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return isRecord(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isCell(value: unknown): value is Cell {
  return value === null || ['string', 'number', 'boolean'].includes(typeof value);
}
