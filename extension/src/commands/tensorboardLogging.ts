/**
 * Where TensorBoard runs live and who writes them: the run directory (`tensorsight.tensorboard.logDir`, resolved
 * against the first workspace folder), whether it holds any event file yet, and, while `tensorsight.tensorboard.logRuns`
 * is on, the `tensorboardDir` launch option (one subfolder per run) that Debug Training (debug/provider.ts) and Run
 * Doctor (cliTools.ts) pass to the agent. Open TensorBoard (tensorboard.ts) offers to turn it on.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { readSettings } from '../common/settings';
import { workspace } from '../common/vscodeapi';

/** The launch option that makes the agent write event files (core/protocol/options.py's LAUNCH_OPTIONS). */
export const TENSORBOARD_OPTION = 'tensorboardDir';
/** How many directory entries `hasEventFiles` looks at before it gives up (a huge tree must not block the host). */
export const MAX_ENTRIES_SEARCHED = 5_000;

/** The run directory Open TensorBoard serves: the setting, relative to the first workspace folder. */
export function tensorBoardRoot(): string {
  const configured = readSettings().tensorboardLogDir || 'runs';
  if (path.isAbsolute(configured)) return configured;
  return path.join(workspace.workspaceFolders()?.[0]?.uri.fsPath ?? process.cwd(), configured);
}

/** Where one run of `program` writes its events: `<root>/<script name>-<date>-<time>` (TensorBoard's run name). */
export function runLogDir(root: string, program: string, now: Date = new Date()): string {
  const stem =
    path
      .basename(program)
      .replace(/\.py$/i, '')
      .replace(/[^\w.-]+/g, '_') || 'run';
  const pad = (value: number) => String(value).padStart(2, '0');
  const stamp =
    `${now.getFullYear()}${pad(now.getMonth() + 1)}${pad(now.getDate())}-` +
    `${pad(now.getHours())}${pad(now.getMinutes())}${pad(now.getSeconds())}`;
  return path.join(root, `${stem}-${stamp}`);
}

/** The run's own `tensorboardDir` when logging is on and the launch configuration names none; else undefined. */
export function tensorBoardDirFor(program: string, options: unknown): string | undefined {
  if (!readSettings().tensorboardLogRuns) return undefined;
  if (isRecord(options) && typeof options[TENSORBOARD_OPTION] === 'string' && options[TENSORBOARD_OPTION]) {
    return undefined;
  }
  return runLogDir(tensorBoardRoot(), program);
}

/** A launch configuration with `options.tensorboardDir` added while `tensorsight.tensorboard.logRuns` is on. */
export function withTensorBoardLogging<T extends { options?: unknown; program?: string; module?: string }>(
  config: T,
): T {
  const dir = tensorBoardDirFor(config.program ?? config.module ?? 'run', config.options);
  if (!dir) return config;
  return { ...config, options: { ...(isRecord(config.options) ? config.options : {}), [TENSORBOARD_OPTION]: dir } };
}

/** True when `dir` or a folder below it holds a TensorBoard event file (`events.out.tfevents.*`). */
export function hasEventFiles(dir: string, budget: { entries: number } = { entries: MAX_ENTRIES_SEARCHED }): boolean {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return false;
  }
  const folders: string[] = [];
  for (const entry of entries) {
    if (--budget.entries < 0) return false;
    if (entry.isFile() && entry.name.startsWith('events.out.tfevents.')) return true;
    if (entry.isDirectory()) folders.push(path.join(dir, entry.name));
  }
  return folders.some((folder) => budget.entries > 0 && hasEventFiles(folder, budget));
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
