// Bundles the extension (extension/src -> out/extension.js, with vscode-languageclient inlined) and copies the
// webview assets (our scripts and styles, and uPlot from node_modules, so nothing loads from a CDN) to out/webview/.
// Run by `npm run compile` (part of `npm run build`).
import { build } from 'esbuild';
import { copyFileSync, mkdirSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const production = process.argv.includes('--production') || process.env.NODE_ENV === 'production';

await build({
  entryPoints: [join(root, 'extension', 'src', 'extension.ts')],
  bundle: true,
  outfile: join(root, 'out', 'extension.js'),
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  external: ['vscode'],
  sourcemap: !production,
  minify: production,
  logLevel: 'warning',
});

const webviewOut = join(root, 'out', 'webview');
mkdirSync(webviewOut, { recursive: true });
const webviewSrc = join(root, 'extension', 'media', 'webview');
for (const name of readdirSync(webviewSrc)) copyFileSync(join(webviewSrc, name), join(webviewOut, name));
const uplot = join(root, 'node_modules', 'uplot', 'dist');
for (const name of ['uPlot.iife.min.js', 'uPlot.min.css']) copyFileSync(join(uplot, name), join(webviewOut, name));
console.log('built out/extension.js and out/webview/');
