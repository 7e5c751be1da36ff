/**
 * Installs the fake editor API at the extension's one seam: any `require` of `common/vscodeapi` from the compiled
 * extension sources resolves to support/fakeVscode instead. Import this first in a test that loads modules which
 * use the editor API.
 */
import Module from 'node:module';
import * as path from 'node:path';

const fakePath = path.join(__dirname, 'fakeVscode.js');
type Resolve = (request: string, parent: unknown, ...rest: unknown[]) => string;
const moduleWithResolve = Module as unknown as { _resolveFilename: Resolve };
const original = moduleWithResolve._resolveFilename;
moduleWithResolve._resolveFilename = function (request: string, parent: unknown, ...rest: unknown[]): string {
  if (/(^|\/)vscodeapi$/.test(request)) return fakePath;
  if (request === 'vscode') throw new Error('a module imported "vscode" directly; use common/vscodeapi (the seam)');
  return original.call(this, request, parent, ...rest);
};
