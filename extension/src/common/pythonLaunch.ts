/**
 * How the extension starts every Python process of its own: the language server, the CLI tools (doctor, profile,
 * shapes, overfit), TensorBoard and the debug adapter. Each runs `python -I pyhelpers/tensorsight/launch.py --path
 * DIR... [--after DIR]... [--chdir DIR] -m MODULE ARGS` from the `pyhelpers` folder, never `python -m MODULE` from the workspace: `-m`
 * puts the working directory first on sys.path, so a workspace's `json.py`, `dataclasses.py` or `tensorsight/` would
 * run in our process, trusted or not. `-I` drops PYTHONPATH and the user site (`-E`, for the processes that run the
 * user's code, drops PYTHONPATH only and keeps the user's own packages), so the directories the process needs
 * are named explicitly (`--path`, in order, ahead of the standard library; the user's PYTHONPATH, for the tools, as
 * `--after`, behind it, so an entry like `.` cannot shadow the standard library); the bootstrap also drops what Python
 * 3.10 still prepends under `-I`. The environment keeps PYTHONPATH for the processes a tool starts in turn (they are the
 * user's, as before). Pure (no editor API), so the unit tests and the Python tests (through
 * tests/extension/support/printLaunch.ts) check the very argv the extension spawns.
 */
import * as path from 'node:path';
import type { ExtensionPaths } from './paths';
import { prependPath } from './process';

export interface PythonLaunch {
  command: string;
  args: string[];
  env: Record<string, string>;
  /** Where the process starts: the `pyhelpers` folder, never the workspace. */
  cwd: string;
}

export interface IsolatedTarget {
  module: string;
  args?: readonly string[];
  /** Directories first on sys.path, in this order (missing ones are skipped by the bootstrap). */
  searchPath: readonly string[];
  /** Directories last on sys.path, behind the standard library and site-packages (the user's PYTHONPATH). */
  searchPathAfter?: readonly string[];
  /** The folder the module runs in once sys.path is fixed (a user's script expects its workspace). */
  chdir?: string;
  /**
   * The process runs the user's code with the user's packages (a tool, TensorBoard): `-E` instead of `-I` keeps the
   * user site-packages (`pip install --user`); the working directory still never reaches sys.path.
   */
  userPackages?: boolean;
}

export type Environment = Readonly<Record<string, string | undefined>>;

export const SERVER_MODULE = 'tensorsight.server';
export const CLI_MODULE = 'tensorsight';

/** The bootstrap script inside `pyhelpers`. */
export function launchScript(pyhelpers: string): string {
  return path.join(pyhelpers, 'tensorsight', 'launch.py');
}

export function isolatedLaunch(
  python: string,
  pyhelpers: string,
  target: IsolatedTarget,
  env: Environment,
): PythonLaunch {
  const args = [target.userPackages ? '-E' : '-I', launchScript(pyhelpers)];
  for (const entry of target.searchPath) if (entry) args.push('--path', entry);
  for (const entry of target.searchPathAfter ?? []) if (entry) args.push('--after', entry);
  if (target.chdir) args.push('--chdir', target.chdir);
  args.push('-m', target.module, ...(target.args ?? []));
  return { command: python, args, env: definedOnly(env), cwd: pyhelpers };
}

/** The environment of a process that runs our helpers: pyhelpers first on PYTHONPATH, output unbuffered. */
function helpersEnvironment(baseEnv: Environment, paths: ExtensionPaths, separator: string): Environment {
  return {
    ...baseEnv,
    PYTHONPATH: prependPath(baseEnv.PYTHONPATH, [paths.pyhelpers], separator),
    PYTHONUNBUFFERED: '1',
  };
}

/** The language server: the bundled libraries (pygls, lsprotocol, nvidia-ml-py) win over the interpreter's own. */
export function serverLaunch(
  python: string,
  paths: ExtensionPaths,
  baseEnv: Environment,
  separator: string = path.delimiter,
): PythonLaunch {
  const env = helpersEnvironment(baseEnv, paths, separator);
  return isolatedLaunch(
    python,
    paths.pyhelpers,
    { module: SERVER_MODULE, searchPath: [paths.bundledLibs, paths.pyhelpers] },
    env,
  );
}

/**
 * A CLI tool on a user's script (`python -m tensorsight TOOL --json [OPTIONS] FILE`): it runs user code, so only in a trusted
 * workspace (the caller checks). The script sees the user's PYTHONPATH (behind the standard library) and runs in
 * `cwd`.
 */
export function toolLaunch(
  python: string,
  paths: ExtensionPaths,
  tool: string,
  target: string,
  cwd: string,
  baseEnv: Environment,
  separator: string = path.delimiter,
  toolOptions: readonly string[] = [],
): PythonLaunch {
  const env = helpersEnvironment(baseEnv, paths, separator);
  return isolatedLaunch(
    python,
    paths.pyhelpers,
    {
      module: CLI_MODULE,
      args: [tool, '--json', ...toolOptions, target],
      searchPath: [paths.pyhelpers],
      searchPathAfter: userPythonPath(baseEnv, separator),
      chdir: cwd,
      userPackages: true,
    },
    env,
  );
}

/** Any other module of the user's interpreter (TensorBoard), with the user's PYTHONPATH. */
export function moduleLaunch(
  python: string,
  paths: ExtensionPaths,
  module: string,
  args: readonly string[],
  baseEnv: Environment,
  separator: string = path.delimiter,
): PythonLaunch {
  return isolatedLaunch(
    python,
    paths.pyhelpers,
    { module, args, searchPath: [], searchPathAfter: userPythonPath(baseEnv, separator), userPackages: true },
    baseEnv,
  );
}

function userPythonPath(env: Environment, separator: string): string[] {
  return (env.PYTHONPATH ?? '').split(separator).filter((entry) => entry.length > 0);
}

function definedOnly(env: Environment): Record<string, string> {
  const defined: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) if (value !== undefined) defined[key] = value;
  return defined;
}
