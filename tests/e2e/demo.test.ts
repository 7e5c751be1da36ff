/**
 * End-to-end (7): `scripts/demo.sh` serves VS Code on 127.0.0.1 behind a password made for that run. The printed URL
 * opens code-server's password page (not the editor), a wrong password is refused, and the printed password opens
 * the workbench. Runs the real script (with --no-setup: the prerequisites are checked here) in real Chromium.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type Browser, chromium, type Page } from 'playwright-core';
import { checkPrerequisites, freePort } from './support/codeServer';
import { CHROMIUM, REPO } from './support/paths';

const DEMO = path.join(REPO, 'scripts', 'demo.sh');
const TIMEOUT = 120_000;

let demo: ChildProcess | undefined;
let output = '';
let browser: Browser | undefined;
let page: Page;
let url = '';
let password = '';

/** Resolves with the first match of `pattern` in the demo's output, failing after `timeoutMs`. */
function printed(pattern: RegExp, timeoutMs: number): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    const check = () => {
      const match = pattern.exec(output);
      if (!match) return false;
      clearInterval(timer);
      clearTimeout(limit);
      resolve(match);
      return true;
    };
    const timer = setInterval(check, 100);
    const limit = setTimeout(() => {
      clearInterval(timer);
      reject(new Error(`the demo did not print ${String(pattern)}:\n${output}`));
    }, timeoutMs);
    check();
  });
}

const passwordField = () => page.locator('input[type="password"]');

describe('the demo behind a password', { timeout: 10 * 60_000 }, () => {
  before(async () => {
    const problem = checkPrerequisites();
    if (problem) throw new Error(problem);
    const port = await freePort();
    demo = spawn('bash', [DEMO, '--no-setup'], {
      cwd: REPO,
      env: { ...process.env, PORT: String(port) },
      detached: true, // its own process group: code-server goes with it at the end
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    demo.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    demo.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    url = (await printed(/open (http:\/\/127\.0\.0\.1:\d+\/\S*)/, TIMEOUT))[1] ?? '';
    password = (await printed(/password: (\S+)/, TIMEOUT))[1] ?? '';
    await printed(/HTTP server listening/, TIMEOUT);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking'],
    });
    page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
  });

  after(async () => {
    await browser?.close().catch(() => undefined);
    if (demo?.pid !== undefined && demo.exitCode === null) {
      const exited = new Promise((resolve) => demo?.once('exit', resolve));
      process.kill(-demo.pid, 'SIGTERM');
      await exited;
    }
  });

  test('7a. the printed URL is on loopback and opens the password page, not the editor', async () => {
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/\?folder=/);
    assert.match(password, /^[0-9a-f]{32,}$/, 'a long random password for this run');
    await page.goto(url);
    await passwordField().waitFor({ timeout: TIMEOUT });
    assert.equal(await page.locator('.monaco-workbench').count(), 0);
  });

  test('7b. a wrong password is refused', async () => {
    await passwordField().fill(`${password}x`);
    await passwordField().press('Enter');
    await page.waitForLoadState('load');
    await passwordField().waitFor({ timeout: TIMEOUT });
    assert.equal(await page.locator('.monaco-workbench').count(), 0);
  });

  test('7c. the printed password gets in', async () => {
    await passwordField().fill(password);
    await passwordField().press('Enter');
    await page.waitForSelector('.monaco-workbench', { timeout: TIMEOUT });
  });
});
