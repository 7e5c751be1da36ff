// Removes the __pycache__ folders that test runs leave in the folders the .vsix ships (pyhelpers/ and
// extension/bundled/libs/), so that the package holds sources only. Run by `npm run package`, before vsce.
import { readdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

function removeBytecode(folder) {
  let entries;
  try {
    entries = readdirSync(folder, { withFileTypes: true });
  } catch {
    return; // not there (e.g. the libraries are not bundled yet)
  }
  for (const entry of entries) {
    if (!entry.isDirectory()) continue;
    const path = join(folder, entry.name);
    if (entry.name === '__pycache__') rmSync(path, { recursive: true, force: true });
    else removeBytecode(path);
  }
}

for (const shipped of ['pyhelpers', join('extension', 'bundled', 'libs')]) removeBytecode(join(root, shipped));
