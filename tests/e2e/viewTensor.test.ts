/**
 * "TensorSight: View Tensor" end to end in real VS Code (code-server + Chromium, the built .vsix): stopped at a
 * breakpoint, the palette command asks for an expression and the panel draws its histogram and heatmap with the exact
 * NaN/+Inf counts; on the next stop the panel refreshes by itself, a hover over a NaN cell names its index, and
 * "Since the last stop" shows the previous counts and the cells that became NaN/Inf. The user guide's picture
 * (extension/media/view-tensor.png with TENSORSIGHT_UPDATE_PICTURES=1, else test-output/pictures/) comes from that
 * moment. A second test opens it from the Variables context menu, then views an image (and switches its
 * normalisation), a rank-3 tensor through the slice picker and a 1-D row as a line. A failure leaves a screenshot in
 * test-output/e2e/.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, test, type TestContext } from 'node:test';
import type { FrameLocator, Page } from 'playwright-core';
import { startWorkbench, withScreenshotOnFailure, type Workbench } from './support/codeServer';
import { REPO, VENV_PYTHON } from './support/paths';
import { expandLocals, goToLine, openFile, runCommand, stopDebugging, TIMEOUT, variableRow } from './support/workbench';

const PROGRAM = 'view_tensor.py';
// Two stops on the same line; between them the weights gain two NaNs and one +Inf.
const SOURCE = `"""A weight grid that gains NaNs and an Inf between two stops (tests/e2e/viewTensor.test.ts)."""
import torch

weights = torch.linspace(-1.0, 1.0, 48 * 64).reshape(48, 64)
for step in range(2):
    if step == 1:
        weights[3, 5] = float("nan")
        weights[40, 60] = float("nan")
        weights[20, 10] = float("inf")
    print("step", step)  # stop here
print("done")
`;
const STOP_LINE = SOURCE.split('\n').findIndex((line) => line.includes('# stop here')) + 1;
const MEDIA =
  process.env.TENSORSIGHT_UPDATE_PICTURES === '1'
    ? path.join(REPO, 'extension', 'media')
    : path.join(REPO, 'test-output', 'pictures');

let workbench: Workbench;

const step = (t: TestContext, body: () => Promise<void>): Promise<void> =>
  withScreenshotOnFailure(workbench, t.name, body);

function viewer(page: Page): FrameLocator {
  return page.frameLocator('iframe.webview.ready').frameLocator('#active-frame');
}

async function count(view: FrameLocator, key: string): Promise<string> {
  return (await view.locator(`td[data-count="${key}"]`).innerText({ timeout: TIMEOUT })).trim();
}

/** Runs "TensorSight: View Tensor" from the palette on `expression`. */
async function viewExpression(page: Page, expression: string): Promise<void> {
  await runCommand(page, 'TensorSight: View Tensor');
  const input = page.locator('.quick-input-widget input[placeholder="weights"]');
  await input.waitFor({ state: 'visible', timeout: TIMEOUT });
  await input.fill(expression);
  await page.keyboard.press('Enter');
}

describe('View Tensor in real VS Code', { timeout: 10 * 60_000 }, () => {
  before(async () => {
    workbench = await startWorkbench('view-tensor');
    fs.writeFileSync(path.join(workbench.workspace, PROGRAM), SOURCE);
  });
  after(async () => {
    if (workbench) await stopDebugging(workbench.page).catch(() => undefined);
    await workbench?.close();
  });

  test('the panel draws the NaN counts and cells, and compares with the previous stop', async (t) => {
    await step(t, async () => {
      const page = workbench.page;
      await openFile(page, PROGRAM);
      await goToLine(page, STOP_LINE);
      await page.keyboard.press('F9');
      await page.locator('.codicon-debug-breakpoint').first().waitFor({ timeout: TIMEOUT });
      await runCommand(page, 'Debug: Select and Start Debugging');
      await page.locator('.quick-input-list .monaco-list-row', { hasText: 'Train: breakpoints' }).first().click();
      await page.locator('.debug-toolbar').waitFor({ state: 'visible', timeout: TIMEOUT });
      await expandLocals(page);

      await runCommand(page, 'TensorSight: View Tensor');
      const input = page.locator('.quick-input-widget input[placeholder="weights"]');
      await input.waitFor({ state: 'visible', timeout: TIMEOUT });
      await input.fill('weights');
      await page.keyboard.press('Enter');
      const view = viewer(page);
      await view.locator('canvas.heatmap').waitFor({ timeout: 3 * TIMEOUT });
      assert.equal(await count(view, 'nan'), '0');
      assert.equal(await count(view, 'posinf'), '0');
      assert.match(await view.locator('header').innerText(), /torch · float32 · \[48, 64\] · cpu/);
      assert.match(await view.locator('section.since').innerText(), /Step and view again/);

      // the next stop: the panel refreshes by itself and compares with the first
      await page.locator('.debug-toolbar .codicon-debug-continue').click();
      await view.locator('td[data-previous="nan"]').waitFor({ timeout: 3 * TIMEOUT });
      assert.equal(await count(view, 'nan'), '2');
      assert.equal(await count(view, 'posinf'), '1');
      assert.match(await view.locator('td[data-previous="nan"]').innerText(), /previous stop 0 \(\+2\)/);
      assert.match(
        await view.locator('[data-diff="heatmap"]').innerText(),
        /3 cells changed between finite and NaN\/Inf/,
      );

      // a hover over the cell at [3, 5] (each cell one element: 48 x 64 is under the pooling size)
      const heatmap = view.locator('canvas.heatmap');
      const box = await heatmap.boundingBox();
      assert.ok(box, 'the heatmap is on screen');
      await page.mouse.move(box.x + ((5 + 0.5) / 64) * box.width, box.y + ((3 + 0.5) / 48) * box.height);
      await view.locator('.tip', { hasText: '[3, 5] = NaN' }).waitFor({ timeout: TIMEOUT });

      // the NaN cell is drawn in the NaN colour (magenta), read back from the canvas
      const pixel = await heatmap.evaluate((canvas: HTMLCanvasElement) => {
        const x = Math.floor(((5 + 0.5) / 64) * canvas.width);
        const y = Math.floor(((3 + 0.5) / 48) * canvas.height);
        return Array.from(canvas.getContext('2d')?.getImageData(x, y, 1, 1).data ?? []);
      });
      assert.deepEqual(pixel, [255, 0, 255, 255]);

      // the panel alone in the editor area for the picture: one column, its tab in front
      await runCommand(page, 'View: Single Column Editor Layout');
      await page.locator('.tabs-container .tab', { hasText: 'View Tensor: weights' }).first().click();
      if (await page.locator('.part.panel').isVisible()) await runCommand(page, 'View: Toggle Panel Visibility');
      const body = view.locator('body');
      const area = await page.locator('iframe.webview.ready').boundingBox();
      assert.ok(area && area.width > 100 && area.height > 100, 'the panel is on screen');
      fs.mkdirSync(MEDIA, { recursive: true });
      const file = path.join(MEDIA, 'view-tensor.png');
      await body.locator('section.since').waitFor({ timeout: TIMEOUT });
      await page.mouse.move(area.x + area.width - 4, area.y + 4);
      await page.screenshot({
        path: file,
        clip: { x: area.x, y: area.y, width: Math.min(area.width, 1000), height: Math.min(area.height, 820) },
      });
      const reduce =
        'import sys; from PIL import Image; ' +
        'Image.open(sys.argv[1]).convert("RGB").quantize(colors=128, method=Image.Quantize.FASTOCTREE)' +
        '.save(sys.argv[1], optimize=True)';
      execFileSync(VENV_PYTHON, ['-c', reduce, file], { stdio: 'pipe', timeout: 60_000 });
      assert.ok(fs.statSync(file).size < 160 * 1024, 'the picture stays small (the .vsix ships it)');
    });
  });

  test('an image with its normalisation, a slice picker for rank 3, and a line for 1-D', async (t) => {
    await step(t, async () => {
      const page = workbench.page;
      const view = viewer(page);
      // from the Variables view's context menu: the row's evaluateName, no question asked
      await viewExpression(page, 'weights[0]');
      await view.locator('canvas.line').waitFor({ timeout: TIMEOUT });
      await variableRow(page, 'weights').click({ button: 'right' });
      // a click that lands while the menu still takes the focus from the webview leaves it open: Enter on the
      // hovered item then picks it (a menu that closed ran the command once; nothing is pressed twice)
      const item = page.locator('.context-view .action-label', { hasText: /^View Tensor$/ }).first();
      await item.hover();
      await item.click();
      const closed = await page
        .locator('.context-view .monaco-menu')
        .waitFor({ state: 'hidden', timeout: 5_000 })
        .then(
          () => true,
          () => false,
        );
      if (!closed) await page.keyboard.press('Enter');
      await view.locator('canvas.heatmap').waitFor({ timeout: TIMEOUT });
      assert.match(await view.locator('header h1').innerText(), /^weights$/);
      await viewExpression(page, 'torch.stack([weights, weights * 2, -weights])');
      await view.locator('canvas.image').waitFor({ timeout: TIMEOUT });
      assert.match(await view.locator('body').innerText(), /1 of 1 images shown \(CHW\)/);
      // the agent answers again with one range over all channels, and the page is drawn anew with the toggle on it
      await view.locator('select').evaluate((select: HTMLSelectElement) => select.setAttribute('data-old', ''));
      await view.locator('select').selectOption('global');
      const redrawn = view.locator('select:not([data-old])');
      await redrawn.waitFor({ timeout: TIMEOUT });
      assert.equal(await redrawn.inputValue(), 'global');

      await viewExpression(page, 'weights.reshape(2, 24, 64)');
      const index = view.locator('input[data-slice="0"]');
      await index.waitFor({ timeout: TIMEOUT });
      assert.match(await view.locator('.slice-picker').innerText(), /Slice \[0, :, :\]/);
      await index.fill('1');
      await index.press('Enter');
      await view.locator('.slice-picker', { hasText: 'Slice [1, :, :]' }).waitFor({ timeout: TIMEOUT });
      // the second half holds the NaN at [40, 60], which is [1, 16, 60] of the reshaped tensor
      assert.equal(await count(view, 'nan'), '2', 'counts are over the whole tensor, not the slice');

      await viewExpression(page, 'weights[3]');
      await view.locator('canvas.line').waitFor({ timeout: TIMEOUT });
      assert.equal(await count(view, 'nan'), '1');
    });
  });
});
