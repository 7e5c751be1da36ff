/**
 * From the first-NaN stop to View Tensor in real VS Code (code-server + Chromium, the built .vsix): "Train: stop at
 * NaN" on a heteroscedastic regression whose hand-written Gaussian NLL takes torch.log of a variance that goes below
 * 0 (tests/programs/heteroscedastic.py) stops at that line; the exception widget ends with the link the agent writes,
 * and Ctrl+click on it (VS Code's link detector opens links of its own scheme through the extension's URI handler)
 * opens the viewer on the op's output with the NaN cells the reason counts, drawn in magenta. The user guide's
 * picture (extension/media/nan-link.png with TENSORSIGHT_UPDATE_PICTURES=1, else test-output/pictures/) comes from
 * that moment. The same stop then opens a Watch expression from the Watch view's context menu, and the editor's hover
 * on a name (VS Code shows it for the keyboard, or with Alt held; its debugger hover otherwise) offers "View Tensor".
 * A failure leaves a screenshot in test-output/e2e/.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, test, type TestContext } from 'node:test';
import type { FrameLocator, Locator, Page } from 'playwright-core';
import { startWorkbench, withScreenshotOnFailure, type Workbench } from './support/codeServer';
import { REPO, VENV_PYTHON } from './support/paths';
import { goToLine, openFile, pickQuickItem, runCommand, stopDebugging, TIMEOUT } from './support/workbench';

const PROGRAM = 'heteroscedastic.py';
const SOURCE = path.join(REPO, 'tests', 'programs', PROGRAM);
const MEDIA =
  process.env.TENSORSIGHT_UPDATE_PICTURES === '1'
    ? path.join(REPO, 'extension', 'media')
    : path.join(REPO, 'test-output', 'pictures');
const MAGENTA = [255, 0, 255, 255];
const DEF_LINE =
  fs
    .readFileSync(SOURCE, 'utf8')
    .split('\n')
    .findIndex((line) => line.startsWith('def gaussian_nll(')) + 1;
const MEAN_COLUMN = 'def gaussian_nll(m'.length + 1; // inside `mean`, the function's first parameter

let workbench: Workbench;

const step = (t: TestContext, body: () => Promise<void>): Promise<void> =>
  withScreenshotOnFailure(workbench, t.name, body);

function viewer(page: Page): FrameLocator {
  return page.frameLocator('iframe.webview.ready').frameLocator('#active-frame');
}

async function count(view: FrameLocator, key: string): Promise<string> {
  return (await view.locator(`td[data-count="${key}"]`).innerText({ timeout: TIMEOUT })).trim();
}

/** Right-clicks `row` and picks "View Tensor" (Enter on the hovered item when the menu stays open under the click). */
async function viewFromContextMenu(page: Page, row: Locator): Promise<void> {
  await row.click({ button: 'right' });
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
}

describe('the first-NaN stop opens View Tensor in real VS Code', { timeout: 10 * 60_000 }, () => {
  before(async () => {
    workbench = await startWorkbench('nan-link');
    fs.copyFileSync(SOURCE, path.join(workbench.workspace, PROGRAM));
  });
  after(async () => {
    if (workbench) await stopDebugging(workbench.page).catch(() => undefined);
    await workbench?.close();
  });

  test("the stop's link opens the op's output with its NaN cells counted and marked", async (t) => {
    await step(t, async () => {
      const page = workbench.page;
      await openFile(page, PROGRAM);
      await runCommand(page, 'Debug: Select and Start Debugging');
      await pickQuickItem(page, 'Train: stop at NaN');
      const widget = page.locator('.exception-widget');
      await widget.waitFor({ state: 'visible', timeout: 4 * TIMEOUT });
      assert.match(await widget.locator('.title').innerText(), /NaN born here/);
      const made = /torch\.log made (\d+) NaN/.exec(await widget.locator('.description').innerText());
      assert.ok(made, 'the reason names the op and its NaN count');
      const link = widget.locator('.stack-trace a.link', { hasText: '/viewTensor?' }).first();
      await link.waitFor({ state: 'visible', timeout: TIMEOUT });
      assert.match(
        await link.innerText(),
        /^[a-z-]+:\/\/tensorsight\.tensorsight\/viewTensor\?session=[0-9a-f-]+&tensor=output$/,
      );

      await link.click({ modifiers: ['Control'] }); // VS Code follows a link in the widget on Ctrl+click
      const view = viewer(page);
      await view.locator('canvas.heatmap').waitFor({ timeout: 3 * TIMEOUT });
      assert.equal(await view.locator('header h1').innerText(), '(nonfinite).output');
      assert.match(await view.locator('header').innerText(), /torch · float32 · \[32, 16\] · cpu/);
      assert.equal(await count(view, 'nan'), made[1]);

      // the NaN cells are drawn in magenta: as many magenta cells as NaNs, read back from the canvas (32 x 16 is
      // under the pooling size, so each cell is one element), and a hover on the first names its index
      const heatmap = view.locator('canvas.heatmap');
      const cells = await heatmap.evaluate((canvas: HTMLCanvasElement, colour: number[]) => {
        const context = canvas.getContext('2d');
        const found: Array<[number, number]> = [];
        if (!context) return found;
        for (let row = 0; row < 32; row++) {
          for (let col = 0; col < 16; col++) {
            const x = Math.floor(((col + 0.5) / 16) * canvas.width);
            const y = Math.floor(((row + 0.5) / 32) * canvas.height);
            const pixel = Array.from(context.getImageData(x, y, 1, 1).data);
            if (pixel.every((value, i) => value === colour[i])) found.push([row, col]);
          }
        }
        return found;
      }, MAGENTA);
      assert.equal(cells.length, Number(made[1]), `magenta cells ${JSON.stringify(cells)}`);
      const [row, col] = cells[0] ?? [0, 0];
      // more room for the picture below: the panel (Debug Console) hidden, the heatmap scrolled into the viewer
      if (await page.locator('.part.panel').isVisible()) await runCommand(page, 'View: Toggle Panel Visibility');
      await heatmap.scrollIntoViewIfNeeded();
      const box = await heatmap.boundingBox();
      assert.ok(box, 'the heatmap is on screen');
      await page.mouse.move(box.x + ((col + 0.5) / 16) * box.width, box.y + ((row + 0.5) / 32) * box.height);
      await view.locator('.tip', { hasText: `[${row}, ${col}] = NaN` }).waitFor({ timeout: TIMEOUT });

      // the picture for the user guide: the stop's widget with its link beside the panel it opened (the hovered
      // NaN cell's tip on it)
      fs.mkdirSync(MEDIA, { recursive: true });
      const file = path.join(MEDIA, 'nan-link.png');
      const editors = await page.locator('.part.editor').boundingBox();
      assert.ok(editors, 'the editor area is on screen');
      await page.screenshot({ path: file, clip: editors });
      const reduce =
        'import sys; from PIL import Image; ' +
        'Image.open(sys.argv[1]).convert("RGB").quantize(colors=96, method=Image.Quantize.FASTOCTREE)' +
        '.save(sys.argv[1], optimize=True)';
      execFileSync(VENV_PYTHON, ['-c', reduce, file], { stdio: 'pipe', timeout: 60_000 });
      assert.ok(fs.statSync(file).size < 160 * 1024, 'the picture stays small (the .vsix ships it)');
    });
  });

  test('at the same stop, the Watch view and a hover on a name open it too', async (t) => {
    await step(t, async () => {
      const page = workbench.page;
      const view = viewer(page);
      // the Watch view: an expression added with its "Add Expression" action, then its context menu
      await runCommand(page, 'Run and Debug: Focus on Watch View');
      const watchPane = page.locator('.pane', { has: page.locator('.pane-header', { hasText: 'Watch' }) }).first();
      await watchPane.locator('.pane-header').hover();
      await watchPane.locator('.pane-header .action-label[aria-label="Add Expression"]').click();
      const input = watchPane.locator('.monaco-inputbox input').first();
      await input.waitFor({ state: 'visible', timeout: TIMEOUT });
      await input.fill('variance');
      await page.keyboard.press('Enter');
      const watch = watchPane.locator('.monaco-list-row', { hasText: /^\s*variance =/ }).first();
      await watch.waitFor({ timeout: TIMEOUT });
      await viewFromContextMenu(page, watch);
      await view.locator('header h1', { hasText: /^variance$/ }).waitFor({ timeout: TIMEOUT });
      assert.match(await view.locator('header').innerText(), /\[32, 16\]/);

      // the editor's hover on `mean` (the keyboard's "Show or Focus Hover"; under the pointer VS Code shows its
      // debugger hover in the stopped frame's file, and the editor's while Alt is held) offers View Tensor
      await page.locator('.tabs-container .tab', { hasText: PROGRAM }).first().click();
      await page.keyboard.press('Escape'); // closes the exception widget, which covers the function's first lines
      await page.locator('.exception-widget').waitFor({ state: 'hidden', timeout: TIMEOUT });
      await goToLine(page, DEF_LINE, MEAN_COLUMN);
      await runCommand(page, 'Show or Focus Hover');
      const offer = page.locator('.monaco-hover a', { hasText: 'View Tensor' }).first();
      await offer.waitFor({ state: 'visible', timeout: TIMEOUT });
      await offer.click();
      await view.locator('header h1', { hasText: /^mean$/ }).waitFor({ timeout: TIMEOUT });
      assert.match(await view.locator('header').innerText(), /\[32, 16\]/);
    });
  });
});
