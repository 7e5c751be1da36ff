/** The webviews' HTML shell: strict CSP with a nonce, no inline or remote code, data safely embedded. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { contentSecurityPolicy, makeNonce, renderPage } from '../../extension/src/panel/html';

test('the policy allows only our own resources and nonce scripts', () => {
  const csp = contentSecurityPolicy('vscode-resource:', 'N0NCE');
  assert.match(csp, /default-src 'none'/);
  assert.match(csp, /script-src 'nonce-N0NCE'/);
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|https?:/);
});

test('every script carries the nonce; the initial data cannot close its script block', () => {
  const html = renderPage(
    {
      title: 'T <x>',
      cspSource: 'vscode-resource:',
      scripts: ['vscode-resource:/a.js', 'vscode-resource:/b.js'],
      styles: ['vscode-resource:/s.css'],
      initialData: { text: '</script><script>alert(1)</script>' },
      lang: 'es',
    },
    'abc123',
  );
  const scripts = html.match(/<script[^>]*>/g) ?? [];
  assert.equal(scripts.length, 3);
  for (const tag of scripts.filter((s) => s.includes('src='))) assert.match(tag, /nonce="abc123"/);
  assert.equal(html.split('</script>').length - 1, 3, 'no extra </script> from the data');
  assert.match(html, /<title>T &lt;x&gt;<\/title>/);
  assert.match(html, /<html lang="es">/);
});

test('nonces are fresh and alphanumeric', () => {
  const a = makeNonce();
  assert.match(a, /^[A-Za-z0-9]{16,}$/);
  assert.notEqual(a, makeNonce());
});
