/**
 * The first hour of a new user, end-to-end in real VS Code (code-server + Chromium), on a folder with no launch.json:
 *   1. a plain F5 on a training script debugs it with "Debug Training" and measures it: the training panel shows the
 *      loss, the learning rate, the gradient norms and the time per phase, with no option set anywhere;
 *   2. "create a launch.json file" (Debug: Add Configuration..., the Run view's link) writes a valid "Debug Training"
 *      entry, once; F5 on it stops at a breakpoint, and Stop ends the session.
 * A failure leaves a screenshot in test-output/e2e/.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, afterEach, before, describe, test, type TestContext } from 'node:test';
import { startWorkbench, withScreenshotOnFailure, type Workbench } from './support/codeServer';
import { markedLines, OUTPUT, WORKSPACE_SOURCE } from './support/paths';
import {
  expandLocals,
  goToLine,
  openFile,
  runCommand,
  statusItem,
  stopDebugging,
  TIMEOUT,
  variableRow,
} from './support/workbench';

const TRAINING = 'correct_training.py';
const BREAKPOINTS = 'nan_training.py';

let workbench: Workbench;

const step = (t: TestContext, body: () => Promise<void>): Promise<void> =>
  withScreenshotOnFailure(workbench, t.name, body);

/** After F5 or a command that may ask which debugger to use: answer "Debug Training" if it asks. */
async function pickDebugTrainingIfAsked(workbench: Workbench, done: () => Promise<unknown>): Promise<void> {
  const page = workbench.page;
  const row = page.locator('.quick-input-widget .quick-input-list .monaco-list-row', { hasText: 'Debug Training' });
  const asked = await Promise.race([
    row
      .first()
      .waitFor({ state: 'visible', timeout: TIMEOUT })
      .then(() => true),
    done().then(() => false),
  ]);
  if (asked) await row.first().click();
}

describe('the first hour in real VS Code (no launch.json)', { timeout: 15 * 60_000 }, () => {
  before(async () => {
    workbench = await startWorkbench('first-hour', { examples: [TRAINING], launchJson: false });
  });
  after(async () => {
    await workbench?.close();
  });
  afterEach(async () => {
    await stopDebugging(workbench.page);
  });

  test('1. a plain F5 measures: the panel shows loss, learning rate, gradient norms and phases', async (t) => {
    await step(t, async () => {
      const page = workbench.page;
      await openFile(page, TRAINING);
      await statusItem(page, 'TensorSight: ready').waitFor({ timeout: TIMEOUT });
      const toolbar = page.locator('.debug-toolbar');
      await page.keyboard.press('F5');
      await pickDebugTrainingIfAsked(workbench, () => toolbar.waitFor({ state: 'visible', timeout: TIMEOUT }));
      await toolbar.waitFor({ state: 'visible', timeout: TIMEOUT });
      await toolbar.waitFor({ state: 'hidden', timeout: 5 * TIMEOUT }); // the run ends by itself (no NaN)
      await runCommand(page, 'TensorSight: Show Training Panel');
      const panel = page.frameLocator('iframe.webview.ready').frameLocator('#active-frame');
      await panel.locator('.uplot').first().waitFor({ timeout: TIMEOUT });
      await panel.locator('.phase-row[data-phase="forward"]').waitFor({ timeout: TIMEOUT });
      const titles = await panel.locator('h2').allInnerTexts();
      for (const title of ['Loss', 'Learning rate', 'Gradient norm per layer', 'Time per phase'])
        assert.ok(titles.includes(title), titles.join());
      const text = await panel.locator('body').innerText();
      assert.doesNotMatch(text, /enable the "measure" option/);
      await page.screenshot({ path: path.join(OUTPUT, 'training-panel-plain-f5.png') });
      await runCommand(page, 'View: Close All Editors');
    });
  });

  test('2. create a launch.json file, then F5 stops at a breakpoint and Stop ends the session', async (t) => {
    await step(t, async () => {
      const page = workbench.page;
      const launchJson = path.join(workbench.workspace, '.vscode', 'launch.json');
      assert.equal(fs.existsSync(launchJson), false);
      await openFile(page, BREAKPOINTS);
      await runCommand(page, 'Debug: Add Configuration...'); // what the Run view's "create a launch.json file" does
      const opened = page.locator('.tabs-container .tab.active', { hasText: 'launch.json' });
      await pickDebugTrainingIfAsked(workbench, () => opened.waitFor({ timeout: TIMEOUT }));
      await opened.waitFor({ timeout: TIMEOUT });
      // JSON with comments: VS Code heads the file with `//` lines
      const text = fs.readFileSync(launchJson, 'utf8').replace(/^\s*\/\/.*$/gm, '');
      const written = JSON.parse(text) as {
        configurations: Array<Record<string, unknown>>;
      };
      const entries = written.configurations.filter((c) => c.type === 'tensorsight');
      assert.equal(entries.length, 1, JSON.stringify(written));
      const entry = entries[0] ?? {};
      assert.equal(entry.request, 'launch');
      assert.equal(entry.program, '${file}');
      for (const value of Object.values(entry))
        assert.ok(typeof value !== 'string' || !value.startsWith('^'), `snippet syntax left: ${String(value)}`);

      await openFile(page, BREAKPOINTS);
      await goToLine(page, markedLines(path.join(WORKSPACE_SOURCE, BREAKPOINTS)).get('tensor-breakpoint') ?? 0);
      await page.keyboard.press('F9');
      await page.keyboard.press('F5');
      await expandLocals(page);
      const loss = variableRow(page, 'loss');
      await loss.waitFor({ timeout: 3 * TIMEOUT });
      assert.match((await loss.innerText()).replace(/\s+/g, ' '), /f32\[\]/);
      await runCommand(page, 'Debug: Stop');
      await page.locator('.debug-toolbar').waitFor({ state: 'hidden', timeout: TIMEOUT });
    });
  });
});
