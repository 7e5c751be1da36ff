/**
 * Where the extension's Python parts live inside the installed extension (or the repository, in development):
 * `pyhelpers/` (the tensorsight package and the pydevd plugin) and `extension/bundled/libs` (debugpy, pygls and
 * friends, installed by the build). Pure: the root comes from the extension context.
 */
import * as path from 'node:path';

export interface ExtensionPaths {
  root: string;
  pyhelpers: string;
  bundledLibs: string;
  webview: string;
}

export function extensionPaths(root: string): ExtensionPaths {
  return {
    root,
    pyhelpers: path.join(root, 'pyhelpers'),
    bundledLibs: path.join(root, 'extension', 'bundled', 'libs'),
    webview: path.join(root, 'out', 'webview'),
  };
}
