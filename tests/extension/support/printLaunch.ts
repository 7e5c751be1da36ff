/**
 * Prints, as JSON, the launch the extension builds (common/pythonLaunch.ts), so the Python tests start the language
 * server and the CLI tools with the very same argv, working directory and environment (tests/support/lsp.py and
 * tests/server/test_isolated_start.py bundle this file with esbuild and run it with node).
 *   node printLaunch.js '{"kind": "server" | "tool", "python", "root", "env", "bundledLibs"?, "tool"?, "target"?,
 *   "cwd"?}'   (`bundledLibs` stands for a build's extension/bundled/libs, e.g. a fake pynvml)
 */
import { extensionPaths } from '../../../extension/src/common/paths';
import { serverLaunch, toolLaunch } from '../../../extension/src/common/pythonLaunch';

interface Request {
  kind: 'server' | 'tool';
  python: string;
  root: string;
  env: Record<string, string>;
  bundledLibs?: string;
  tool?: string;
  target?: string;
  cwd?: string;
}

const request = JSON.parse(process.argv[2] ?? '{}') as Request;
const paths = { ...extensionPaths(request.root), ...(request.bundledLibs ? { bundledLibs: request.bundledLibs } : {}) };
const launch =
  request.kind === 'server'
    ? serverLaunch(request.python, paths, request.env)
    : toolLaunch(request.python, paths, request.tool ?? 'doctor', request.target ?? '', request.cwd ?? '', request.env);
process.stdout.write(JSON.stringify(launch));
