/**
 * The HTML shell of our webviews, with a strict Content-Security-Policy: nothing loads but our own bundled files
 * (scripts only with a fresh nonce, styles and images only from the extension), no inline script, no remote host.
 * Pure, so the policy is pinned by a unit test.
 */
import { randomBytes } from 'node:crypto';

export interface WebviewPage {
  title: string;
  cspSource: string;
  scripts: string[];
  styles: string[];
  /** JSON handed to the page's script (localised strings, initial state); read from a non-executable <script>. */
  initialData: unknown;
  lang: string;
}

export function makeNonce(): string {
  return randomBytes(18)
    .toString('base64')
    .replace(/[^A-Za-z0-9]/g, '');
}

export function contentSecurityPolicy(cspSource: string, nonce: string): string {
  return [
    "default-src 'none'",
    `img-src ${cspSource} data:`,
    `style-src ${cspSource}`,
    `font-src ${cspSource}`,
    `script-src 'nonce-${nonce}'`,
  ].join('; ');
}

export function renderPage(page: WebviewPage, nonce: string = makeNonce()): string {
  const styles = page.styles.map((href) => `<link rel="stylesheet" href="${escapeAttribute(href)}">`).join('\n    ');
  const scripts = page.scripts
    .map((src) => `<script nonce="${nonce}" src="${escapeAttribute(src)}"></script>`)
    .join('\n    ');
  // JSON in a data block: '<' is escaped so no "</script>" in the data can end the block early.
  const data = JSON.stringify(page.initialData).replace(/</g, '\\u003c');
  return `<!DOCTYPE html>
<html lang="${escapeAttribute(page.lang)}">
  <head>
    <meta charset="UTF-8">
    <meta http-equiv="Content-Security-Policy" content="${contentSecurityPolicy(page.cspSource, nonce)}">
    <meta name="viewport" content="width=device-width, initial-scale=1.0">
    <title>${escapeText(page.title)}</title>
    ${styles}
  </head>
  <body>
    <main id="root"></main>
    <script id="initial-data" type="application/json">${data}</script>
    ${scripts}
  </body>
</html>`;
}

function escapeAttribute(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
}

function escapeText(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
