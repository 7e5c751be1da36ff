/**
 * How the language server process is started: `python -m tensorsight.server` over stdio, with our `pyhelpers` on
 * PYTHONPATH and the bundled libraries (pygls, lsprotocol, nvidia-ml-py) named in TENSORSIGHT_BUNDLED_LIBS, which the
 * server puts on sys.path itself before importing pygls. Pure, so the unit tests pin the contract.
 */
import * as path from 'node:path';
import type { ExtensionPaths } from '../common/paths';
import { prependPath } from '../common/process';

export interface ServerLaunch {
  command: string;
  args: string[];
  env: Record<string, string>;
}

export const SERVER_MODULE = 'tensorsight.server';

export function serverLaunch(
  python: string,
  paths: ExtensionPaths,
  baseEnv: Readonly<Record<string, string | undefined>>,
  separator: string = path.delimiter,
): ServerLaunch {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(baseEnv)) if (value !== undefined) env[key] = value;
  env.PYTHONPATH = prependPath(baseEnv.PYTHONPATH, [paths.pyhelpers], separator);
  env.TENSORSIGHT_BUNDLED_LIBS = paths.bundledLibs;
  env.PYTHONUNBUFFERED = '1';
  return { command: python, args: ['-m', SERVER_MODULE], env };
}
