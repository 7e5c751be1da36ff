/**
 * More of a new user's first hour, end-to-end in real VS Code (code-server + Chromium), each point walked as a user
 * walks it (keyboard, palette, banner, views) and checked on what the user sees:
 *   1. a 5 s pause at a breakpoint in the middle of a Debug Training run leaves the training loop's code lens (time per
 *      step) as a run without the pause shows it, within noise; while the run waits for its first step the lens says
 *      so (not "run it with Debug Training");
 *   2. in a folder opened untrusted (Restricted Mode), trusting it through the banner and pressing F5 at once gives
 *      that first run its inlay hints and its Problems entry (the run reached the language server's hub);
 *   3. "Add Tensor Breakpoint" with the cursor on a method (`backward` of `loss.backward()`) offers conditions on the
 *      tensor `loss`, never on the method; on a method of an expression (`(loss / n).backward()`) it offers nothing;
 *   4. after a debug run and "Run Doctor on This File" of the same file, Problems lists its one bug once, and the
 *      findings of an older run of another file are gone.
 * A failure leaves a screenshot in test-output/e2e/.
 */
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { after, afterEach, before, describe, test, type TestContext } from 'node:test';
import type { Page } from 'playwright-core';
import { startWorkbench, withScreenshotOnFailure, type Workbench } from './support/codeServer';
import { markedLines, WORKSPACE_SOURCE } from './support/paths';
import { goToLine, openFile, runCommand, statusItem, stopDebugging, TIMEOUT } from './support/workbench';

const STEADY = 'steady_training.py';
const NAN = 'nan_training.py';
const RETAINED = 'retained_graph.py'; // `total_loss += loss` at line 26: TS104, the doctor's and a run's finding
const RETAINED_BUG_LINE = 26;
const PAUSE_MS = 5000;

const steadyMarks = markedLines(path.join(WORKSPACE_SOURCE, STEADY));
const nanMarks = markedLines(path.join(WORKSPACE_SOURCE, NAN));

/** Polls `read` until `check` holds on its value, or fails with the last value seen. */
async function until<T>(read: () => Promise<T>, check: (value: T) => boolean, what: string, timeout = TIMEOUT) {
  const deadline = Date.now() + timeout;
  let value = await read();
  while (!check(value)) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last seen: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
    value = await read();
  }
  return value;
}

/** After F5: answer "Debug Training" if VS Code asks which debugger to use, then wait for the session's toolbar. */
async function pressF5(page: Page): Promise<void> {
  const toolbar = page.locator('.debug-toolbar');
  await page.keyboard.press('F5');
  const row = page.locator('.quick-input-widget .quick-input-list .monaco-list-row', { hasText: 'Debug Training' });
  const asked = await Promise.race([
    row
      .first()
      .waitFor({ state: 'visible', timeout: TIMEOUT })
      .then(() => true),
    toolbar.waitFor({ state: 'visible', timeout: TIMEOUT }).then(() => false),
  ]);
  if (asked) await row.first().click();
  await toolbar.waitFor({ state: 'visible', timeout: TIMEOUT });
}

async function runToTheEnd(page: Page): Promise<void> {
  await pressF5(page);
  await page.locator('.debug-toolbar').waitFor({ state: 'hidden', timeout: 5 * TIMEOUT });
}

/** The debugger stopped on `line` of the active editor (the status bar's cursor follows the stop). */
async function stoppedAt(page: Page, line: number): Promise<void> {
  await page
    .locator('.debug-top-stack-frame-line, .debug-top-stack-frame')
    .first()
    .waitFor({ timeout: 3 * TIMEOUT });
  await statusItem(page, new RegExp(`Ln ${line},`)).waitFor({ timeout: TIMEOUT });
}

const lensTexts = (page: Page): Promise<string[]> =>
  page.locator('.monaco-editor .codelens-decoration').allInnerTexts();

/** The training loop's lens once it shows a finished run's breakdown: its ms per step and step count. */
async function finalLens(page: Page): Promise<{ title: string; msPerStep: number; steps: number }> {
  const texts = await until(
    () => lensTexts(page),
    (all) => all.some((text) => /ms\/step \(\d+ steps\)/.test(text)),
    "the lens of the run's summary",
  );
  const title = texts.find((text) => /ms\/step \(\d+ steps\)/.test(text)) ?? '';
  const match = /— ([\d.]+) ms\/step \((\d+) steps\)/.exec(title);
  assert.ok(match, title);
  return { title, msPerStep: Number(match[1]), steps: Number(match[2]) };
}

/** The "other" percentage a lens title shows (NaN when it shows none). */
const otherShare = (title: string): number => Number(/other (\d+)%/.exec(title)?.[1] ?? NaN);

interface ProblemRows {
  files: string[]; // the file rows' names
  markers: string[]; // the problem rows' texts (message, source, code, [Ln, Col])
}

async function problems(page: Page): Promise<ProblemRows> {
  const rows = await page
    .locator('.markers-panel .monaco-list-row')
    .evaluateAll((elements) =>
      elements.map((element) => [element.getAttribute('aria-label') ?? '', (element as HTMLElement).innerText]),
    );
  const files: string[] = [];
  const markers: string[] = [];
  for (const [label, text] of rows) {
    const file = /problems? in file (\S+)/.exec(label ?? '');
    if (file?.[1]) files.push(file[1]);
    else markers.push((text ?? '').replace(/\s+/g, ' '));
  }
  return { files, markers };
}

const atRetainedBug = (rows: ProblemRows): string[] =>
  rows.markers.filter((text) => text.includes(`[Ln ${RETAINED_BUG_LINE},`));

async function showProblems(page: Page): Promise<void> {
  await runCommand(page, 'View: Focus Problems');
  await page.locator('.markers-panel').waitFor({ timeout: TIMEOUT });
}

/** "Run Doctor on This File" on the active editor, waiting for its report's notification. */
async function runDoctor(page: Page, file: string): Promise<void> {
  await runCommand(page, 'TensorSight: Run Doctor on This File');
  await page
    .locator('.notifications-toasts', { hasText: new RegExp(`TensorSight doctor: .*in ${file.replace('.', '\\.')}`) })
    .first()
    .waitFor({ timeout: 5 * TIMEOUT });
}

let workbench: Workbench;
const step = (t: TestContext, body: () => Promise<void>): Promise<void> =>
  withScreenshotOnFailure(workbench, t.name, body);

describe('more of the first hour in real VS Code (no launch.json, trusted folder)', { timeout: 20 * 60_000 }, () => {
  before(async () => {
    workbench = await startWorkbench('first-hour-more', { examples: [RETAINED], launchJson: false });
  });
  after(async () => {
    await workbench?.close();
  });
  afterEach(async () => {
    await stopDebugging(workbench.page);
  });

  test('3. Add Tensor Breakpoint on a method offers its tensor, never the method', async (t) => {
    await step(t, async () => {
      const page = workbench.page;
      await openFile(page, NAN);
      await statusItem(page, 'TensorSight: ready').waitFor({ timeout: TIMEOUT });
      const title = page.locator('.quick-input-widget .quick-input-title');
      const rows = page.locator('.quick-input-widget .quick-input-list .monaco-list-row');

      // `        loss.backward()`: the cursor on "backward" (columns 14..21)
      const line = nanMarks.get('tensor-breakpoint') ?? 0;
      await goToLine(page, line, 17);
      await runCommand(page, 'TensorSight: Add Tensor Breakpoint');
      await title.filter({ hasText: 'Tensor breakpoint on loss' }).waitFor({ timeout: TIMEOUT });
      await rows.filter({ hasText: 'tensorsight.nan(loss)' }).first().waitFor({ timeout: TIMEOUT });
      const offered = (await rows.allInnerTexts()).map((text) => text.replace(/\s+/g, ' '));
      const conditions = offered.filter((text) => text.startsWith('tensorsight.'));
      assert.ok(conditions.length >= 3, offered.join('\n'));
      for (const condition of conditions) {
        assert.match(condition, /\(loss[,)]/, `a condition on loss: ${condition}`);
        assert.doesNotMatch(condition, /backward/, `no condition on the method: ${condition}`);
      }
      await rows.filter({ hasText: 'tensorsight.nan(loss)' }).first().click();
      await statusItem(page, 'Tensor breakpoint set: tensorsight.nan(loss)').waitFor({ timeout: TIMEOUT });
      await page.locator('.codicon-debug-breakpoint-conditional').first().waitFor({ timeout: TIMEOUT });

      // `        (loss / accumulation).backward()`: a method of an expression, no name to test
      await openFile(page, STEADY);
      await goToLine(page, steadyMarks.get('chained-backward') ?? 0, 32);
      await runCommand(page, 'TensorSight: Add Tensor Breakpoint');
      await title.filter({ hasText: /^\s*Tensor breakpoint\s*$/ }).waitFor({ timeout: TIMEOUT });
      const only = (await rows.allInnerTexts()).map((text) => text.trim());
      assert.deepEqual(only, ['Type a condition…'], only.join('\n'));
      await page.keyboard.press('Escape');
      await runCommand(page, 'Remove All Breakpoints');
      await page.locator('.codicon-debug-breakpoint-conditional').first().waitFor({ state: 'detached' });
      await runCommand(page, 'View: Close All Editors');
    });
  });

  test('1. a 5 s pause at a breakpoint leaves the time per step of the code lens as it was', async (t) => {
    await step(t, async () => {
      const page = workbench.page;
      await openFile(page, STEADY);
      await until(
        () => lensTexts(page),
        (all) => all.some((text) => text.includes('run it with Debug Training')),
        'the lens before any run',
      );

      // a run without a pause
      await runToTheEnd(page);
      const plain = await finalLens(page);

      // the same run, held before the loop and then 5 s in the middle of it
      await goToLine(page, steadyMarks.get('before-loop') ?? 0);
      await page.keyboard.press('F9');
      await goToLine(page, steadyMarks.get('pause') ?? 0);
      await page.keyboard.press('F9');
      await pressF5(page);
      await stoppedAt(page, steadyMarks.get('before-loop') ?? 0);
      // a session of this file runs and no step is measured yet: the lens says so, not "run it with Debug Training"
      await page
        .locator('.monaco-editor .codelens-decoration', { hasText: 'measuring… waiting for the first step' })
        .waitFor({ timeout: TIMEOUT });
      assert.ok(!(await lensTexts(page)).some((text) => text.includes('run it with')));
      await page.keyboard.press('F5'); // continue
      await stoppedAt(page, steadyMarks.get('pause') ?? 0);
      // stopped after the 7th step: the lens of the run so far, its start-up step left out as the summary leaves it
      const live = await page
        .locator('.monaco-editor .codelens-decoration', { hasText: /ms\/step \(step 7\)/ })
        .first()
        .innerText({ timeout: TIMEOUT });
      assert.ok(otherShare(live) < 50, `the start-up step left out of the live lens: ${live}`);
      await page.waitForTimeout(PAUSE_MS); // the user's pause at the breakpoint: the point of this test
      await runCommand(page, 'Remove All Breakpoints');
      await page.keyboard.press('F5'); // continue to the end
      await page.locator('.debug-toolbar').waitFor({ state: 'hidden', timeout: 5 * TIMEOUT });
      const paused = await finalLens(page);

      t.diagnostic(`without pause: ${plain.title}`);
      t.diagnostic(`at the pause:  ${live}`);
      t.diagnostic(`with the pause: ${paused.title}`);
      assert.equal(paused.steps, plain.steps);
      // Were the pause counted, it would add PAUSE_MS / steps to every step's mean (455 ms for 11 steps), far above
      // this shared machine's run-to-run noise (16 to 130 ms/step seen), and it would be "other" time (the pause is
      // between two steps): most of the step, where the loop's own "other" is 5 to 30%.
      const leak = PAUSE_MS / paused.steps;
      assert.ok(
        paused.msPerStep < plain.msPerStep + leak / 2,
        `${paused.msPerStep} ms/step with the pause vs ${plain.msPerStep} without (a counted pause adds ${leak.toFixed(0)})`,
      );
      assert.ok(otherShare(paused.title) < 50, `"other" time with the pause: ${paused.title}`);
      await runCommand(page, 'View: Close All Editors');
    });
  });

  test('4. a debug run and the doctor of one file list its bug once; an older run of another file is gone', async (t) => {
    await step(t, async () => {
      const page = workbench.page;
      // an older run of another file: the NaN run stops at its NaN and leaves that finding in Problems
      await openFile(page, NAN);
      await pressF5(page);
      await stoppedAt(page, nanMarks.get('nan-origin') ?? 0);
      await runCommand(page, 'Debug: Stop');
      await page.locator('.debug-toolbar').waitFor({ state: 'hidden', timeout: TIMEOUT });
      await showProblems(page);
      await until(
        () => problems(page),
        (rows) => rows.files.includes(NAN),
        `the NaN run's finding in ${NAN}`,
      );
      await runCommand(page, 'View: Close All Editors');

      // a debug run of the file with the bug
      await openFile(page, RETAINED);
      await runToTheEnd(page);
      await showProblems(page);
      const afterRun = await until(
        () => problems(page),
        (rows) => atRetainedBug(rows).some((text) => text.includes('run)')) && !rows.files.includes(NAN),
        "the run's problem at the bug, and the older run's gone",
      );
      assert.equal(atRetainedBug(afterRun).length, 1, afterRun.markers.join('\n'));

      // and the doctor on the same file
      await runDoctor(page, RETAINED);
      await showProblems(page);
      const afterDoctor = await until(
        () => problems(page),
        (rows) => atRetainedBug(rows).some((text) => text.includes('doctor')),
        "the doctor's report merged into the problem at the bug",
      );
      t.diagnostic(afterDoctor.markers.join('\n'));
      const atBug = atRetainedBug(afterDoctor);
      assert.equal(atBug.length, 1, `one problem for the one bug:\n${afterDoctor.markers.join('\n')}`);
      assert.match(atBug[0] ?? '', /TS104/);
      const aboutTheGraph = afterDoctor.markers.filter((text) => /autograd graph|total_loss/.test(text));
      assert.equal(aboutTheGraph.length, 1, afterDoctor.markers.join('\n'));
      assert.deepEqual(afterDoctor.files, [RETAINED], 'no older findings of other files');
    });
  });
});

describe('the first F5 after trusting a folder in real VS Code', { timeout: 15 * 60_000 }, () => {
  let trusting: Workbench;
  before(async () => {
    trusting = await startWorkbench('first-hour-trust', {
      examples: [RETAINED],
      launchJson: false,
      workspaceTrust: true,
    });
  });
  after(async () => {
    await trusting?.close();
  });

  test('2. trusting the folder through the banner, then F5: that run has its inlay hints and Problems', async (t) => {
    await withScreenshotOnFailure(trusting, t.name, async () => {
      const page = trusting.page;
      await openFile(page, RETAINED);
      await statusItem(page, 'Restricted Mode').waitFor({ timeout: TIMEOUT });
      await statusItem(page, 'TensorSight: restricted').waitFor({ timeout: TIMEOUT });

      // the Restricted Mode banner's "Manage" opens the Workspace Trust editor; its "Trust" trusts the folder
      await page.locator('.monaco-workbench .banner a', { hasText: 'Manage' }).first().click();
      await page
        .locator('.workspace-trust-editor .monaco-button', { hasText: /^Trust$/ })
        .first()
        .click({ timeout: TIMEOUT });
      const modal = page.locator('.monaco-modal-editor-block');
      await modal.locator('.codicon-close').first().click({ timeout: TIMEOUT });
      await modal.waitFor({ state: 'hidden', timeout: TIMEOUT });
      // back in the script (closing the modal can leave the keyboard focus outside the editor, where a key press may
      // never reach VS Code), then F5 at once, while the language server may still be restarting for the new trust
      await page.locator('.editor-group-container.active .monaco-editor .view-lines').first().click();
      const serverState = (await statusItem(page, /TensorSight/).innerText()).trim();
      t.diagnostic(`status bar at F5: ${serverState}`);
      await runToTheEnd(page);

      // the run's shapes, as inlay hints on the lines that made them
      await page
        .locator('.editor-group-container.active .view-line', { hasText: /inputs:\s*f32\[256,\s*20\]/ })
        .first()
        .waitFor({ timeout: TIMEOUT });
      // and its finding, merged with the rule's, in Problems
      await showProblems(page);
      const rows = await until(
        () => problems(page),
        (found) => atRetainedBug(found).some((text) => text.includes('TensorSight (rule + run)')),
        "the run's finding in Problems",
      );
      assert.equal(atRetainedBug(rows).length, 1, rows.markers.join('\n'));
      assert.match(atRetainedBug(rows)[0] ?? '', /keeps the autograd graph of every step alive \(\d+ steps so far/);
      assert.equal(await page.locator('.notifications-toasts', { hasText: /hub/i }).count(), 0);
    });
  });
});
