// Installs the Python libraries the .vsix ships (extension/requirements-bundled.txt: debugpy, pygls and its
// dependencies, nvidia-ml-py) into extension/bundled/libs, as pure-Python wheels checked against their hashes.
// Skipped when the libs already match the requirements file. Run by `npm run bundle:python` (part of `npm run build`).
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const requirements = join(root, 'extension', 'requirements-bundled.txt');
const target = join(root, 'extension', 'bundled', 'libs');
const stamp = join(root, 'extension', 'bundled', '.requirements.sha256');
const venvPython = join(root, '.venv', 'bin', 'python');
const python = process.env.PYTHON ?? (existsSync(venvPython) ? venvPython : 'python3');

const wanted = createHash('sha256').update(readFileSync(requirements)).digest('hex');
if (existsSync(stamp) && readFileSync(stamp, 'utf8').trim() === wanted && existsSync(join(target, 'debugpy'))) {
  console.log('extension/bundled/libs is up to date');
  process.exit(0);
}
rmSync(target, { recursive: true, force: true });
mkdirSync(target, { recursive: true });
const args = [
  '-m',
  'pip',
  'install',
  '--quiet',
  '--disable-pip-version-check',
  '--no-deps',
  '--require-hashes',
  '--only-binary=:all:',
  '--platform',
  'any',
  '--implementation',
  'py',
  '--python-version',
  '3.10',
  '--target',
  target,
  '-r',
  requirements,
];
const result = spawnSync(python, args, { stdio: 'inherit' });
if (result.status !== 0) {
  console.error(`pip install into extension/bundled/libs failed (${python})`);
  process.exit(result.status ?? 1);
}
// Compiled caches would tie the bundle to the builder's Python version; the user's Python writes its own.
spawnSync('find', [target, '-name', '__pycache__', '-prune', '-exec', 'rm', '-rf', '{}', '+']);
writeFileSync(stamp, wanted + '\n');
console.log(`bundled Python libraries into extension/bundled/libs (${python})`);
