/**
 * Small driver functions over the VS Code workbench DOM (code-server 4.139 / VS Code 1.139), used by the e2e tests:
 * run a command from the palette, open a file, go to a line, read the status bar and the debug views. Each waits on
 * a selector, never on a fixed delay.
 */
import type { Locator, Page } from 'playwright-core';

export const TIMEOUT = 60_000;

/**
 * Opens a quick input with `key` and types `text`. The workbench may close a quick input right after it opens (a
 * previous one still closing, focus moving to a debugger stop's line): open it again, a bounded number of times.
 * A webview that has just opened holds the focus, and a key pressed while its frame still loads never reaches the
 * workbench: the focus is taken back to the workbench first.
 */
async function typeInQuickInput(page: Page, key: string, text: string): Promise<void> {
  const input = page.locator('.quick-input-widget input');
  for (let attempt = 1; ; attempt++) {
    await page.evaluate(() => {
      if (document.activeElement instanceof HTMLIFrameElement) document.activeElement.blur();
    });
    await page.keyboard.press(key);
    try {
      await input.waitFor({ state: 'visible', timeout: 10_000 });
      await input.fill(text, { timeout: 10_000 });
      return;
    } catch (error) {
      if (attempt >= 3) throw error;
      await page.keyboard.press('Escape');
    }
  }
}

export async function runCommand(page: Page, label: string, pick?: string): Promise<void> {
  // The palette can close under the click (a webview that opened a moment before takes the focus back, and the
  // row, found in the still unfiltered list, is no longer visible): the whole command is asked again, a bounded
  // number of times. A click that landed closes the palette, so a retry never runs a command twice.
  const row = page.locator('.quick-input-list .monaco-list-row', { hasText: pick ?? label }).first();
  for (let attempt = 1; ; attempt++) {
    await typeInQuickInput(page, 'F1', `>${label}`);
    try {
      await row.waitFor({ state: 'visible', timeout: attempt >= 3 ? TIMEOUT : 15_000 });
      await row.click({ timeout: attempt >= 3 ? TIMEOUT : 10_000 });
      return;
    } catch (error) {
      if (attempt >= 3) throw error;
      await page.keyboard.press('Escape');
    }
  }
}

/** Picks an entry of an open quick pick by its text, typing `filter` first when given. */
export async function pickQuickItem(page: Page, text: string | RegExp, filter?: string): Promise<void> {
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible', timeout: TIMEOUT });
  if (filter !== undefined) await input.fill(filter);
  const row = page.locator('.quick-input-list .monaco-list-row', { hasText: text }).first();
  await row.waitFor({ state: 'visible', timeout: TIMEOUT });
  await row.click();
}

export async function openFile(page: Page, name: string): Promise<void> {
  await typeInQuickInput(page, 'Control+P', name);
  const row = page.locator('.quick-input-list .monaco-list-row', { hasText: name }).first();
  await row.click(); // not Enter: the list may still show the previous, unfiltered first entry
  await page.locator(`.tabs-container .tab.active`, { hasText: name }).waitFor({ timeout: TIMEOUT });
  await page.locator('.editor-instance .monaco-editor .view-lines').first().waitFor({ timeout: TIMEOUT });
}

export async function goToLine(page: Page, line: number, column = 1): Promise<void> {
  await page.locator('.editor-group-container.active .monaco-editor .view-lines').first().click();
  await typeInQuickInput(page, 'Control+G', `:${line}:${column}`);
  await page.keyboard.press('Enter');
  await page
    .locator('.statusbar-item', { hasText: `Ln ${line}, Col ${column}` })
    .first()
    .waitFor({ timeout: TIMEOUT })
    .catch(() => undefined);
}

export function statusItem(page: Page, text: string | RegExp): Locator {
  return page.locator('.statusbar-item', { hasText: text }).first();
}

/** The Variables view row of variable `name` (its text reads "name =" then the value). */
export function variableRow(page: Page, name: string): Locator {
  return page.locator('.debug-variables .monaco-list-row', { hasText: new RegExp(`^\\s*${name} =`) }).first();
}

/**
 * Hovers the last characters of `name` on the editor line containing `lineText`. Monaco merges a token with the
 * indentation before it into one span, so the span is found by its ending and hovered near its right edge.
 */
export async function hoverName(page: Page, lineText: string, name: string): Promise<void> {
  const span = page
    .locator('.editor-group-container.active .monaco-editor .view-line', { hasText: lineText })
    .first()
    .locator('span > span', { hasText: new RegExp(`(^|\\s)${name}$`) })
    .first();
  const box = await span.boundingBox({ timeout: TIMEOUT });
  if (!box) throw new Error(`no token ${name} on the line "${lineText}"`);
  await page.mouse.move(box.x + box.width - 4, box.y + box.height / 2);
}

/** Waits for the Variables view to show the frame's scopes and expands "Locals" if VS Code left it collapsed. */
export async function expandLocals(page: Page): Promise<void> {
  const locals = page.locator('.debug-variables .monaco-list-row', { hasText: /^\s*Locals\s*$/ }).first();
  await locals.waitFor({ timeout: 3 * TIMEOUT });
  if ((await locals.getAttribute('aria-expanded')) === 'false') await locals.click();
}

/** Drags the side bar's edge so long values in the Variables view are readable (for the README picture). */
export async function widenSideBar(page: Page, extra: number): Promise<void> {
  const box = await page.locator('.part.sidebar').boundingBox();
  if (!box) return;
  const edgeX = box.x + box.width + 1;
  const y = box.y + box.height / 2;
  await page.mouse.move(edgeX, y);
  await page.mouse.down();
  await page.mouse.move(edgeX + extra, y, { steps: 5 });
  await page.mouse.up();
}

/** Stops every debug session still running (a failed test must not leave one to the next test), bounded. */
export async function stopDebugging(page: Page): Promise<void> {
  const toolbar = page.locator('.debug-toolbar');
  for (let attempt = 0; attempt < 4 && (await toolbar.isVisible()); attempt++) {
    await page.keyboard.press('Escape');
    await runCommand(page, 'Debug: Stop');
    await toolbar.waitFor({ state: 'hidden', timeout: 15_000 }).catch(() => undefined);
  }
}
