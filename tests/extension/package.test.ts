/**
 * The built .vsix (`npm run build`) lists what an offline install needs — the bundled extension, the webview assets,
 * the Python helpers, the bundled Python libraries, translations — and nothing that must not ship.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { PACKAGE_JSON, REPO } from './support/paths';

const vsix = path.join(REPO, `tensorsight-${String(PACKAGE_JSON.version)}.vsix`);

function listing(): string[] {
  const script = 'import sys, zipfile; print("\\n".join(zipfile.ZipFile(sys.argv[1]).namelist()))';
  return execFileSync('python3', ['-c', script, vsix], { encoding: 'utf8' }).trim().split('\n');
}

test('the .vsix holds everything an offline install needs', () => {
  assert.ok(fs.existsSync(vsix), `${vsix} is missing: run \`npm run build\` first`);
  const files = listing();
  const required = [
    'extension/package.json',
    'extension/package.nls.json',
    'extension/package.nls.es.json',
    'extension/out/extension.js',
    'extension/out/webview/training.js',
    'extension/out/webview/results.js',
    'extension/out/webview/tensor.js',
    'extension/out/webview/tensor.css',
    'extension/out/webview/uPlot.iife.min.js',
    'extension/out/webview/webview.css',
    'extension/extension/l10n/bundle.l10n.es.json',
    'extension/extension/media/icon.png',
    'extension/pyhelpers/pydevd_plugins/extensions/pydevd_plugin_tensorsight.py',
    'extension/pyhelpers/tensorsight/__init__.py',
    'extension/pyhelpers/tensorsight/launch.py',
    'extension/pyhelpers/tensorsight/debugpy_start/adapter.py',
    'extension/pyhelpers/tensorsight/debugpy_start/launcher/__main__.py',
    'extension/pyhelpers/tensorsight/cli/doctor.py',
    'extension/pyhelpers/tensorsight/l10n/es.json',
    'extension/extension/bundled/libs/debugpy/__init__.py',
    'extension/extension/bundled/libs/debugpy/adapter/__main__.py',
    'extension/extension/bundled/libs/pygls/__init__.py',
    'extension/extension/bundled/libs/lsprotocol/types.py',
    'extension/extension/bundled/libs/cattrs/__init__.py',
    'extension/extension/bundled/libs/attrs/__init__.py',
    'extension/extension/bundled/libs/typing_extensions.py',
    'extension/extension/bundled/libs/pynvml.py',
  ];
  const missing = required.filter((file) => !files.includes(file));
  assert.deepEqual(missing, []);
  const forbidden = files.filter(
    (file) =>
      /(^|\/)(node_modules|tests|\.venv|\.tools|__pycache__|src)\//.test(
        file.replace(/^extension\/extension\/bundled\/libs\/.*$/, ''),
      ) ||
      /\.(ts|map|pyc)$/.test(file) ||
      /\.egg-info\//.test(file), // left in pyhelpers/ by an in-tree `pip install .`
  );
  assert.deepEqual(forbidden, []);
});

test('the .vsix carries the user guide as its README, not the developers guide', () => {
  const script = 'import sys, zipfile; print(zipfile.ZipFile(sys.argv[1]).read("extension/readme.md").decode())';
  const readme = execFileSync('python3', ['-c', script, vsix], { encoding: 'utf8' });
  const userGuide = fs.readFileSync(path.join(REPO, 'extension', 'README.md'), 'utf8');
  assert.equal(readme.trim(), userGuide.trim());
  assert.match(readme, /^## Settings$/m);
  assert.doesNotMatch(readme, /developers' guide/);
});
