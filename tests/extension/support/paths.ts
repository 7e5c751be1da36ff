/** Repository paths for the TypeScript tests (compiled to out-test/, so found by walking up to our package.json). */
import * as fs from 'node:fs';
import * as path from 'node:path';

function findRepo(start: string): string {
  let dir = start;
  for (;;) {
    const manifest = path.join(dir, 'package.json');
    if (fs.existsSync(manifest) && fs.existsSync(path.join(dir, 'pyhelpers'))) return dir;
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`repository root not found above ${start}`);
    dir = parent;
  }
}

export const REPO = findRepo(__dirname);
export const PYHELPERS = path.join(REPO, 'pyhelpers');
export const BUNDLED_LIBS = path.join(REPO, 'extension', 'bundled', 'libs');
export const VENV_PYTHON = path.join(REPO, '.venv', 'bin', 'python');
export const PACKAGE_JSON = JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8')) as Record<
  string,
  unknown
>;
