/**
 * The user README's pictures, taken from real VS Code (code-server + Chromium, the built .vsix) and checked before
 * each is saved (into extension/media/ with TENSORSIGHT_UPDATE_PICTURES=1; so a picture cannot show what the product
 * no longer does):
 *   1. "Profile Training" on examples/correct_training.py: the time per phase and the top functions with short paths;
 *   2. "Check Shapes" on the same script: one row per module with shapes, parameters and memory;
 *   3. the training panel after a plain F5 (no launch.json, no option set);
 *   4. the Variables view at its default width, stopped at a breakpoint on `loss.backward()`;
 *   5. (no picture) "Overfit One Batch" on the same script: labelled lines, never the JSON document's keys.
 * Each picture is an element screenshot, reduced to a 64-colour palette so the .vsix (which ships extension/media/*.png)
 * stays small. A failure leaves a screenshot of the whole workbench in test-output/e2e/.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, afterEach, before, describe, test, type TestContext } from 'node:test';
import type { FrameLocator, Locator, Page } from 'playwright-core';
import { startWorkbench, withScreenshotOnFailure, type Workbench } from './support/codeServer';
import { markedLines, REPO, VENV_PYTHON, WORKSPACE_SOURCE } from './support/paths';
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
/**
 * Where the pictures go: the README's own (extension/media/) when TENSORSIGHT_UPDATE_PICTURES=1 asks for new ones,
 * else test-output/pictures/, so a test run leaves the tracked files as they are.
 */
const MEDIA =
  process.env.TENSORSIGHT_UPDATE_PICTURES === '1'
    ? path.join(REPO, 'extension', 'media')
    : path.join(REPO, 'test-output', 'pictures');
/** The most a README picture may weigh once saved (the .vsix ships every one of them). */
const MAX_PICTURE_BYTES = 120 * 1024;

let workbench: Workbench;

const step = (t: TestContext, body: () => Promise<void>): Promise<void> =>
  withScreenshotOnFailure(workbench, t.name, body);

/** The content frame of the webview on screen (each test closes its editors, so there is one at a time). */
function activeWebview(page: Page): FrameLocator {
  return page.frameLocator('iframe.webview.ready').frameLocator('#active-frame');
}

/**
 * Saves `target`'s on-screen box (at most `maxHeight` pixels tall) as extension/media/`name`, reduced to a 64-colour
 * palette (Pillow, in the test venv), and returns the file's size.
 */
async function savePicture(page: Page, target: Locator, name: string, maxHeight: number): Promise<number> {
  const box = await target.boundingBox({ timeout: TIMEOUT });
  assert.ok(box && box.width > 100 && box.height > 100, `nothing to photograph for ${name}: ${JSON.stringify(box)}`);
  fs.mkdirSync(MEDIA, { recursive: true });
  const file = path.join(MEDIA, name);
  // no tooltip (a tab's, from the last click) and no row hover in the picture: the mouse rests on a heading's margin
  await page.mouse.move(box.x + box.width - 4, box.y + 50);
  await page
    .locator('.workbench-hover, .monaco-hover:not(.hidden)')
    .first()
    .waitFor({ state: 'hidden', timeout: 10_000 })
    .catch(() => undefined);
  await page.screenshot({
    path: file,
    clip: { x: box.x, y: box.y, width: box.width, height: Math.min(box.height, maxHeight) },
  });
  const reduce =
    'import sys; from PIL import Image; ' +
    'Image.open(sys.argv[1]).convert("RGB").quantize(colors=64).save(sys.argv[1], optimize=True)';
  execFileSync(VENV_PYTHON, ['-c', reduce, file], { stdio: 'pipe', timeout: 60_000 });
  const size = fs.statSync(file).size;
  assert.ok(size < MAX_PICTURE_BYTES, `${name} is ${size} bytes: crop it`);
  return size;
}

/**
 * Runs a palette command that is offered only while a Python editor is active: the palette can open before the
 * workbench has that context (the list then lacks the command), so it is asked again, a bounded number of times.
 */
async function runPythonEditorCommand(page: Page, label: string): Promise<void> {
  const input = page.locator('.quick-input-widget input');
  const row = page.locator('.quick-input-list .monaco-list-row', { hasText: label }).first();
  for (let attempt = 1; ; attempt++) {
    await page.locator('.editor-group-container.active .monaco-editor .view-lines').first().click();
    await page.keyboard.press('F1');
    await input.waitFor({ state: 'visible', timeout: TIMEOUT });
    await input.fill(`>${label}`);
    try {
      await row.waitFor({ state: 'visible', timeout: 15_000 });
      await row.click();
      return;
    } catch (error) {
      if (attempt >= 4) throw error;
      await page.keyboard.press('Escape');
    }
  }
}

/** Runs a TensorSight palette command on the open script and waits for its results view to show `table`. */
async function runTool(page: Page, command: string, table: string): Promise<FrameLocator> {
  await openFile(page, TRAINING);
  await runPythonEditorCommand(page, command);
  await page.locator('.tabs-container .tab.active', { hasText: 'TensorSight' }).waitFor({ timeout: 4 * TIMEOUT });
  // the results alone in the editor area: the picture shows the whole width of the table
  await runCommand(page, 'View: Single Column Editor Layout');
  const view = activeWebview(page);
  await view
    .locator(`section[data-table="${table}"] tbody tr`)
    .first()
    .waitFor({ timeout: 4 * TIMEOUT });
  return view;
}

async function headers(section: Locator): Promise<string[]> {
  return (await section.locator('th').allInnerTexts()).map((text) => text.replace(/[▲▼]/g, '').trim());
}

describe('README pictures from real VS Code', { timeout: 15 * 60_000 }, () => {
  before(async () => {
    workbench = await startWorkbench('screenshots', { examples: [TRAINING], launchJson: false });
    await workbench.page.setViewportSize({ width: 1280, height: 860 });
  });
  after(async () => {
    await workbench?.close();
  });
  afterEach(async () => {
    await stopDebugging(workbench.page);
    await runCommand(workbench.page, 'View: Close All Editors');
  });

  test('1. Profile Training: the time per phase, then the top functions with short paths and units', async (t) => {
    await step(t, async () => {
      const page = workbench.page;
      await openFile(page, TRAINING);
      await statusItem(page, 'TensorSight: ready').waitFor({ timeout: TIMEOUT });
      const view = await runTool(page, 'TensorSight: Profile Training', 'functions');
      const phases = view.locator('section[data-table="phases"]');
      assert.deepEqual(await headers(phases), ['Phase', 'Per step', 'Share']);
      const phaseNames = await phases.locator('tbody tr td:first-child').allInnerTexts();
      assert.deepEqual(phaseNames, ['Data loading', 'Forward', 'Backward', 'Optimizer step', 'Other', 'Whole step']);
      for (const cell of await phases.locator('tbody tr td:nth-child(2)').allInnerTexts())
        assert.match(cell, /^\d[\d,.]* ms$/);
      const functions = view.locator('section[data-table="functions"]');
      assert.deepEqual(await headers(functions), ['Function', 'Location', 'Own time', 'Total time', 'Calls']);
      const locations = await functions.locator('tbody tr td:nth-child(2)').allInnerTexts();
      assert.ok(
        locations.some((where) => /^torch\/nn\/modules\/[\w/]+\.py:\d+$/.test(where)),
        locations.join('\n'),
      );
      const text = await view.locator('body').innerText();
      assert.doesNotMatch(text, /site-packages|cumulative_s|steps_profiled|<built-in method/);
      const totals = (await functions.locator('tbody tr td:nth-child(4)').allInnerTexts()).map((cell) =>
        Number(cell.replace(/[, ms]/g, '')),
      );
      assert.deepEqual(
        totals,
        [...totals].sort((a, b) => b - a),
        'sorted by total time',
      );
      await savePicture(page, view.locator('body'), 'profile.png', 620);
      // a click on "Calls" sorts by the number (as text, "40" would come before "100")
      await functions.locator('th', { hasText: 'Calls' }).click();
      const calls = (await functions.locator('tbody tr td:nth-child(5)').allInnerTexts()).map((cell) =>
        Number(cell.replace(/,/g, '')),
      );
      assert.deepEqual(
        calls,
        [...calls].sort((a, b) => b - a),
        'sorted by calls, as numbers',
      );
    });
  });

  test('2. Check Shapes: one row per module in execution order, shapes as f32[64, 64], memory in KiB', async (t) => {
    await step(t, async () => {
      const page = workbench.page;
      const view = await runTool(page, 'TensorSight: Check Shapes', 'modules');
      const table = view.locator('section[data-table="modules"]');
      assert.deepEqual(await headers(table), ['Module', 'Input shapes', 'Output shape', 'Parameters', 'Memory']);
      const rows = await table
        .locator('tbody tr')
        .evaluateAll((trs) =>
          trs.map((tr) => Array.from(tr.querySelectorAll('td'), (td) => (td.textContent ?? '').trim())),
        );
      assert.deepEqual(rows, [
        ['Sequential', '[64, 20]', 'f32[64, 2]', '1,474', '0 B'],
        ['0 (Linear)', '[64, 20]', 'f32[64, 64]', '1,344', '21.2 KiB'],
        ['1 (ReLU)', '[64, 64]', 'f32[64, 64]', '0', '16.0 KiB'],
        ['2 (Linear)', '[64, 64]', 'f32[64, 2]', '130', '1.0 KiB'],
      ]);
      const summary = await view.locator('table.summary').innerText();
      assert.match(summary, /Parameters\s+1,474 \(1,474 trainable\)/);
      assert.match(summary, /Memory for this batch\s+38\.3 KiB/);
      assert.doesNotMatch(await view.locator('body').innerText(), /input_shapes|memory_bytes|\[\[64/);
      await savePicture(page, view.locator('body'), 'check-shapes.png', 420);
    });
  });

  test('5. Overfit One Batch: the verdict, the model and the loss as labelled lines, never raw keys', async (t) => {
    await step(t, async () => {
      const page = workbench.page;
      const view = await runTool(page, 'TensorSight: Overfit One Batch', 'overfit-where');
      const summary = await view.locator('table.summary').innerText();
      assert.match(summary, /Verdict\s+Passed: the loss approached zero/);
      assert.match(summary, /Model\s+Sequential \(correct_training\.py:\d+\)/);
      assert.match(summary, /Loss\s+CrossEntropyLoss \(correct_training\.py:\d+\)/);
      assert.match(summary, /Loss on the batch\s+[\d.]+ → [\d.e-]+ \(best [\d.e-]+\)/);
      const body = await view.locator('body').innerText();
      assert.doesNotMatch(body, /model_file|model_line|initial_loss|final_loss|stopped with an error/);
      const table = view.locator('section[data-table="overfit-where"]');
      assert.deepEqual(await headers(table), ['What', 'Function', 'Location']);
    });
  });

  test('3. the training panel after a plain F5', async (t) => {
    await step(t, async () => {
      const page = workbench.page;
      await openFile(page, TRAINING);
      const toolbar = page.locator('.debug-toolbar');
      await page.keyboard.press('F5');
      const pick = page.locator('.quick-input-widget .quick-input-list .monaco-list-row', {
        hasText: 'Debug Training',
      });
      const asked = await Promise.race([
        pick
          .first()
          .waitFor({ state: 'visible', timeout: TIMEOUT })
          .then(() => true),
        toolbar.waitFor({ state: 'visible', timeout: TIMEOUT }).then(() => false),
      ]);
      if (asked) await pick.first().click();
      await toolbar.waitFor({ state: 'visible', timeout: TIMEOUT });
      await toolbar.waitFor({ state: 'hidden', timeout: 5 * TIMEOUT }); // the run ends by itself
      await runCommand(page, 'TensorSight: Show Training Panel');
      await runCommand(page, 'View: Single Column Editor Layout');
      // the Debug Console opened by the run would cover half the panel
      if (await page.locator('.part.panel').isVisible()) await runCommand(page, 'View: Toggle Panel Visibility');
      await page.locator('.part.panel').waitFor({ state: 'hidden', timeout: TIMEOUT });
      const panel = activeWebview(page);
      await panel.locator('.uplot').first().waitFor({ timeout: TIMEOUT });
      await panel.locator('.phase-row[data-phase="forward"]').waitFor({ timeout: TIMEOUT });
      const titles = await panel.locator('h2').allInnerTexts();
      for (const title of ['Loss', 'Learning rate', 'Gradient norm per layer', 'Time per phase'])
        assert.ok(titles.includes(title), titles.join());
      assert.doesNotMatch(await panel.locator('body').innerText(), /enable the "measure" option/);
      await savePicture(page, panel.locator('body'), 'training-panel.png', 700);
    });
  });

  test('4. the Variables view at its default width, stopped on loss.backward()', async (t) => {
    await step(t, async () => {
      const page = workbench.page;
      await openFile(page, BREAKPOINTS);
      await goToLine(page, markedLines(path.join(WORKSPACE_SOURCE, BREAKPOINTS)).get('tensor-breakpoint') ?? 0);
      await page.keyboard.press('F9');
      await page.keyboard.press('F5');
      const pick = page.locator('.quick-input-widget .quick-input-list .monaco-list-row', {
        hasText: 'Debug Training',
      });
      const locals = page.locator('.debug-variables .monaco-list-row', { hasText: /^\s*Locals\s*$/ }).first();
      const asked = await Promise.race([
        pick
          .first()
          .waitFor({ state: 'visible', timeout: TIMEOUT })
          .then(() => true),
        locals.waitFor({ timeout: 3 * TIMEOUT }).then(() => false),
      ]);
      if (asked) await pick.first().click();
      await expandLocals(page);
      const loss = variableRow(page, 'loss');
      await loss.waitFor({ timeout: 3 * TIMEOUT });
      assert.match((await loss.innerText()).replace(/\s+/g, ' '), /loss = f32\[\] cpu/);
      const features = variableRow(page, 'features');
      await features.waitFor({ timeout: TIMEOUT });
      assert.match((await features.innerText()).replace(/\s+/g, ' '), /features = f32\[64, 16\] cpu μ=/);
      const sideBar = page.locator('.part.sidebar');
      const width = (await sideBar.boundingBox())?.width ?? 0;
      assert.ok(width > 0 && width < 400, `the side bar is at its default width, not ${width}px`);
      const pane = page.locator('.pane', { has: page.locator('.debug-variables') }).first();
      await savePicture(page, pane, 'variables-view.png', 420);
    });
  });
});
