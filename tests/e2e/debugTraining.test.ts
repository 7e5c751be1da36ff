/**
 * End-to-end in real VS Code (code-server + Chromium), with the built .vsix on a fresh profile:
 *   1. the extension activates and the language server reports ready (status bar);
 *   2. F5 on "Debug Training" with a tensor breakpoint added by the command stops, and the Variables view shows the
 *      tensor summary line and the NaN flag of a NaN loss;
 *   3. hovering a tensor while stopped shows its stats;
 *   4. with break-on-NaN armed, the stop lands on the line that produced the NaN;
 *   5. silent bugs appear in the Problems view (the language server's rules, and "Run Doctor on This File").
 * A failure leaves a screenshot in test-output/e2e/.
 */
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { after, afterEach, before, describe, test, type TestContext } from 'node:test';
import { startWorkbench, withScreenshotOnFailure, type Workbench } from './support/codeServer';
import { markedLines, OUTPUT, WORKSPACE_SOURCE } from './support/paths';
import {
  expandLocals,
  goToLine,
  hoverName,
  openFile,
  pickQuickItem,
  runCommand,
  statusItem,
  TIMEOUT,
  stopDebugging,
  variableRow,
  widenSideBar,
} from './support/workbench';

const PROGRAM = 'nan_training.py';
const marks = markedLines(path.join(WORKSPACE_SOURCE, PROGRAM));

let workbench: Workbench;
let stopsStayFor3 = false;

const step = (t: TestContext, body: () => Promise<void>): Promise<void> =>
  withScreenshotOnFailure(workbench, t.name, body);

describe('TensorSight in real VS Code', { timeout: 15 * 60_000 }, () => {
  before(async () => {
    workbench = await startWorkbench('debug', { examples: ['retained_graph.py'] });
  });
  after(async () => {
    await workbench?.close();
  });
  afterEach(async () => {
    // Test 3 goes on from test 2's stop; every other test starts with no debug session.
    if (!stopsStayFor3) await stopDebugging(workbench.page);
  });

  test('1a. the extension activates on a Python file', async (t) => {
    await step(t, async () => {
      await openFile(workbench.page, PROGRAM);
      await statusItem(workbench.page, 'TensorSight').waitFor({ timeout: TIMEOUT });
    });
  });

  test('1b. the language server reports ready', async (t) => {
    await step(t, async () => {
      await statusItem(workbench.page, 'TensorSight: ready').waitFor({ timeout: TIMEOUT });
    });
  });

  test('2. a tensor breakpoint stops; Variables shows tensor summaries and the NaN flag', async (t) => {
    await step(t, async () => {
      const page = workbench.page;
      await openFile(page, PROGRAM);
      // The cursor on `loss` of `loss.backward()`: the command offers conditions on `loss` for this line.
      await goToLine(page, marks.get('tensor-breakpoint') ?? 0, 10);
      await runCommand(page, 'TensorSight: Add Tensor Breakpoint');
      await pickQuickItem(page, /nan/i, 'nan');
      await page.locator('.codicon-debug-breakpoint-conditional').first().waitFor({ timeout: TIMEOUT });
      await runCommand(page, 'Debug: Select and Start Debugging');
      await pickQuickItem(page, 'Train: breakpoints');
      await expandLocals(page);
      const loss = variableRow(page, 'loss');
      await loss.waitFor({ timeout: 3 * TIMEOUT });
      assert.match((await loss.innerText()).replace(/\s+/g, ' '), /NaN/);
      const features = variableRow(page, 'features');
      await features.waitFor({ timeout: TIMEOUT });
      const summary = (await features.innerText()).replace(/\s+/g, ' ');
      assert.match(summary, /f32\[64, 16\] cpu/);
      assert.match(summary, /μ=|mean/);
      stopsStayFor3 = true;
      await widenSideBar(page, 380);
      await page.screenshot({
        path: path.join(OUTPUT, 'debug-training-variables.png'), // the README picture comes from this moment
        clip: { x: 0, y: 0, width: 1250, height: 560 },
      });
    });
  });

  test('3. hovering a tensor while stopped shows its stats', async (t) => {
    await step(t, async () => {
      const page = workbench.page;
      stopsStayFor3 = false;
      await hoverName(page, 'torch.randn(64, 16)', 'features');
      const hover = page.locator('.debug-hover-widget');
      await hover.waitFor({ state: 'visible', timeout: TIMEOUT });
      assert.match((await hover.innerText()).replace(/\s+/g, ' '), /f32\[64, 16\] cpu/);
      await runCommand(page, 'Debug: Stop');
      await page.locator('.debug-toolbar').waitFor({ state: 'hidden', timeout: TIMEOUT });
    });
  });

  test('4. with break-on-NaN armed, the stop lands on the line that produced the NaN', async (t) => {
    await step(t, async () => {
      const page = workbench.page;
      await runCommand(page, 'Remove All Breakpoints');
      await openFile(page, PROGRAM);
      await runCommand(page, 'Debug: Select and Start Debugging');
      await pickQuickItem(page, 'Train: stop at NaN');
      await page
        .locator('.debug-top-stack-frame-line, .debug-top-stack-frame')
        .first()
        .waitFor({ timeout: 3 * TIMEOUT });
      const line = marks.get('nan-origin') ?? 0;
      await statusItem(page, new RegExp(`Ln ${line},`)).waitFor({ timeout: TIMEOUT });
      const topFrame = page.locator('.debug-call-stack .monaco-list-row').first();
      assert.match((await topFrame.innerText()).replace(/\s+/g, ' '), new RegExp(`train ${PROGRAM} ${line}:`));
      await runCommand(page, 'Debug: Stop');
      await page.locator('.debug-toolbar').waitFor({ state: 'hidden', timeout: TIMEOUT });
    });
  });

  test('5a. the language server shows a silent-bug warning in Problems', async (t) => {
    await step(t, async () => {
      const page = workbench.page;
      await openFile(page, 'retained_graph.py');
      await runCommand(page, 'View: Focus Problems');
      await page
        .locator('.markers-panel .monaco-list-row', { hasText: /autograd graph/ })
        .first()
        .waitFor({ timeout: TIMEOUT });
    });
  });

  test('5b. "Run Doctor on This File" puts its findings in Problems', async (t) => {
    await step(t, async () => {
      const page = workbench.page;
      await openFile(page, 'retained_graph.py');
      await runCommand(page, 'TensorSight: Run Doctor on This File');
      await runCommand(page, 'View: Focus Problems');
      await page
        .locator('.markers-panel .monaco-list-row', { hasText: /keeps the autograd graph of every step alive/ })
        .first()
        .waitFor({ timeout: 3 * TIMEOUT });
    });
  });

  test('7. the training panel plots the measured run (webview, uPlot, strict CSP)', async (t) => {
    await step(t, async () => {
      const page = workbench.page;
      await openFile(page, PROGRAM);
      await runCommand(page, 'Debug: Select and Start Debugging');
      await pickQuickItem(page, 'Train: measure');
      await page.locator('.debug-toolbar').waitFor({ state: 'visible', timeout: TIMEOUT });
      await page.locator('.debug-toolbar').waitFor({ state: 'hidden', timeout: 3 * TIMEOUT });
      await runCommand(page, 'TensorSight: Show Training Panel');
      const panel = page.frameLocator('iframe.webview.ready').frameLocator('#active-frame');
      await panel.locator('.uplot').first().waitFor({ timeout: TIMEOUT });
      await panel.locator('.phase-row[data-phase="forward"]').waitFor({ timeout: TIMEOUT });
      const titles = await panel.locator('h2').allInnerTexts();
      for (const title of ['Loss', 'Learning rate', 'Time per phase']) assert.ok(titles.includes(title), titles.join());
      // the loss went NaN at step 4 and stayed NaN (issue 28): marked on the loss and gradient-norm charts, the
      // gradient norms of steps 1-3 drawn, histograms from the first step on, and the banner says how the run ended
      const marks = panel.locator('.nonfinite-marks');
      await marks.first().waitFor({ timeout: TIMEOUT });
      const marked = await marks.allInnerTexts();
      assert.ok(marked.includes('train/loss: NaN from step 4 to 6'), marked.join('\n'));
      assert.ok(
        marked.some((text) => text.startsWith('train/grad_norm') && text.includes('NaN from step 4 to 6')),
        marked.join('\n'),
      );
      const gradients = panel.locator('section', { has: panel.locator('h2', { hasText: 'Gradient norm per layer' }) });
      assert.equal(await gradients.locator('.uplot canvas').count(), 1);
      await gradients.scrollIntoViewIfNeeded();
      await page.screenshot({ path: path.join(OUTPUT, 'training-panel-nan-gradients.png') });
      await panel.locator('h2').first().scrollIntoViewIfNeeded();
      const banner = await panel.locator('.banner[data-kind="ended"]').innerText();
      assert.match(banner, /The run ended at step 6: the training loss was NaN\/Inf from step 4 on/);
      assert.doesNotMatch(await panel.locator('body').innerText(), /No histogram yet/);
      await page.screenshot({ path: path.join(OUTPUT, 'training-panel.png') });
    });
  });

  test('8. DataLoader worker processes become child sessions without errors; the loop still stops', async (t) => {
    await step(t, async () => {
      const page = workbench.page;
      const program = 'loader_workers.py';
      await runCommand(page, 'Remove All Breakpoints');
      await runCommand(page, 'View: Close All Editors'); // one editor group again (the panel opened beside)
      await openFile(page, program);
      await goToLine(page, markedLines(path.join(WORKSPACE_SOURCE, program)).get('worker-loop') ?? 0);
      await page.keyboard.press('F9');
      await runCommand(page, 'Debug: Select and Start Debugging');
      await pickQuickItem(page, 'Train: breakpoints');
      await expandLocals(page);
      const features = variableRow(page, 'features');
      await features.waitFor({ timeout: 3 * TIMEOUT });
      assert.match((await features.innerText()).replace(/\s+/g, ' '), /f32\[16, 4\] cpu/);
      // debugpy announced the workers (one child session each); none was refused as a non-launch request.
      await page
        .locator('.debug-call-stack .monaco-list-row', { hasText: /Subprocess \d+/ })
        .first()
        .waitFor({ timeout: TIMEOUT });
      const toasts = await page.locator('.notifications-toasts').allInnerTexts();
      assert.ok(!toasts.some((text) => /launch/.test(text)), toasts.join('\n'));
      await runCommand(page, 'Debug: Stop');
      await page.locator('.debug-toolbar').waitFor({ state: 'hidden', timeout: TIMEOUT });
    });
  });
});
