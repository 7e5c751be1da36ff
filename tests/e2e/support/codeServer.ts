/**
 * A real VS Code for the end-to-end tests: code-server (VS Code 1.139 served by Node 24) on 127.0.0.1 with a fresh
 * profile and the built .vsix installed, a fresh copy of the test workspace, and Debian's Chromium driven by
 * playwright-core. See ../../shared/e2e-recipe.md. Every wait is on a selector or an event, with a timeout.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import {
  CHROMIUM,
  CODE_SERVER,
  EXAMPLES,
  SPANISH_LOCALE_FIXTURE,
  VSCE,
  NODE24_BIN,
  OUTPUT,
  VENV_PYTHON,
  vsixPath,
  WORKSPACE_SOURCE,
} from './paths';

export interface Workbench {
  page: Page;
  workspace: string;
  url: string;
  close(): Promise<void>;
  screenshot(name: string): Promise<string>;
  serverLog(): string;
}

export interface StartOptions {
  /** UI language for the profile (`locale` in argv.json), e.g. 'es'. */
  locale?: string;
  /** Extra user settings. */
  settings?: Record<string, unknown>;
  /** Examples copied into the workspace next to tests/e2e/workspace/*. */
  examples?: string[];
  /** false: no .vscode/launch.json (a folder as a new user opens it: plain F5, "create a launch.json file"). */
  launchJson?: boolean;
  /**
   * true: workspace trust on, as VS Code ships it (no --disable-workspace-trust): the folder opens untrusted, in
   * Restricted Mode, and the test trusts it through the UI as a user would. Default false: trust disabled.
   */
  workspaceTrust?: boolean;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

function codeServerEnv(): NodeJS.ProcessEnv {
  return { ...process.env, PATH: `${NODE24_BIN}${path.delimiter}${process.env.PATH ?? ''}` };
}

/**
 * Runs one test's body and, when it fails, keeps a screenshot of the workbench under test-output/e2e and names it in
 * the error, so a red run can be seen.
 */
export async function withScreenshotOnFailure(
  workbench: Workbench,
  testName: string,
  body: () => Promise<void>,
): Promise<void> {
  try {
    await body();
  } catch (error) {
    const shot = await workbench.screenshot(testName.replace(/\W+/g, '-').slice(0, 80));
    throw new Error(`${String(error)}\n(screenshot: ${shot})`, { cause: error });
  }
}

export function checkPrerequisites(): string | undefined {
  if (!fs.existsSync(CODE_SERVER)) return `code-server missing at ${CODE_SERVER}: run scripts/setup-e2e.sh`;
  if (!fs.existsSync(CHROMIUM)) return `Chromium missing at ${CHROMIUM}: run scripts/setup-e2e.sh`;
  if (!fs.existsSync(vsixPath())) return `${vsixPath()} missing: run npm run build`;
  if (!fs.existsSync(VENV_PYTHON)) return `${VENV_PYTHON} missing: run scripts/setup.sh python`;
  return undefined;
}

export async function startWorkbench(name: string, options: StartOptions = {}): Promise<Workbench> {
  const problem = checkPrerequisites();
  if (problem) throw new Error(problem);
  const root = fs.mkdtempSync(path.join(os.tmpdir(), `tensorsight-e2e-${name}-`));
  const userData = path.join(root, 'user-data');
  const extensionsDir = path.join(root, 'extensions');
  const workspace = path.join(root, 'workspace');
  fs.mkdirSync(path.join(userData, 'User'), { recursive: true });
  fs.mkdirSync(path.join(workspace, '.vscode'), { recursive: true });
  for (const file of fs.readdirSync(WORKSPACE_SOURCE))
    fs.copyFileSync(path.join(WORKSPACE_SOURCE, file), path.join(workspace, file));
  for (const example of options.examples ?? [])
    fs.copyFileSync(path.join(EXAMPLES, example), path.join(workspace, example));

  const settings = {
    'tensorsight.python': VENV_PYTHON,
    'workbench.startupEditor': 'none',
    'workbench.tips.enabled': false,
    'workbench.enableExperiments': false,
    'security.workspace.trust.enabled': options.workspaceTrust === true,
    'extensions.autoCheckUpdates': false,
    'extensions.autoUpdate': false,
    'telemetry.telemetryLevel': 'off',
    'editor.hover.delay': 300,
    'debug.openDebug': 'openOnDebugBreak',
    'debug.showInStatusBar': 'never',
    'window.restoreWindows': 'none',
    'chat.disableAIFeatures': true,
    'workbench.secondarySideBar.defaultVisibility': 'hidden',
    'remote.autoForwardPorts': false,
    'workbench.colorTheme': 'Default Light Modern',
    ...options.settings,
  };
  fs.writeFileSync(path.join(userData, 'User', 'settings.json'), JSON.stringify(settings, null, 2));
  if (options.locale) {
    fs.writeFileSync(path.join(userData, 'User', 'argv.json'), JSON.stringify({ locale: options.locale }));
  }
  if (options.launchJson !== false)
    fs.writeFileSync(
      path.join(workspace, '.vscode', 'launch.json'),
      JSON.stringify(
        {
          version: '0.2.0',
          configurations: [
            {
              name: 'Train: breakpoints',
              type: 'tensorsight',
              request: 'launch',
              program: '${file}',
              breakOnNonFinite: false,
            },
            {
              name: 'Train: stop at NaN',
              type: 'tensorsight',
              request: 'launch',
              program: '${file}',
              breakOnNonFinite: true,
            },
            {
              name: 'Train: measure',
              type: 'tensorsight',
              request: 'launch',
              program: '${file}',
              breakOnNonFinite: false,
              options: { measure: true },
            },
          ],
        },
        null,
        2,
      ),
    );

  const install = (vsix: string) =>
    execFileSync(
      CODE_SERVER,
      ['--user-data-dir', userData, '--extensions-dir', extensionsDir, '--install-extension', vsix],
      {
        env: codeServerEnv(),
        stdio: 'pipe',
        timeout: 120_000,
      },
    );
  install(vsixPath());
  if (options.locale === 'es') {
    // VS Code only switches to a display language that an installed language pack declares; this fixture declares
    // Spanish (with no core translations), so the UI language becomes 'es' and TensorSight's Spanish strings load.
    const stub = path.join(root, 'spanish-locale.vsix');
    execFileSync(VSCE, ['package', '--skip-license', '--allow-missing-repository', '-o', stub], {
      cwd: SPANISH_LOCALE_FIXTURE,
      stdio: 'pipe',
      timeout: 120_000,
    });
    install(stub);
    // What VS Code records when a language pack is installed through its UI (the CLI install does not): the server
    // reads it to build the Spanish NLS bundle and to tell the workbench, and so every extension, that the UI is 'es'.
    const translations = path.join(
      extensionsDir,
      'tensorsight-tests.spanish-locale-for-tests-0.0.1',
      'translations',
      'main.i18n.json',
    );
    fs.writeFileSync(
      path.join(userData, 'languagepacks.json'),
      JSON.stringify({
        es: {
          hash: 'tensorsight-e2e-es',
          extensions: [{ extensionIdentifier: { id: 'tensorsight-tests.spanish-locale-for-tests' }, version: '0.0.1' }],
          translations: { vscode: translations },
          label: 'español',
        },
      }),
    );
  }

  const port = await freePort();
  const args = [
    '--auth',
    'none',
    '--bind-addr',
    `127.0.0.1:${port}`,
    '--user-data-dir',
    userData,
    '--extensions-dir',
    extensionsDir,
    '--disable-telemetry',
    '--disable-update-check',
    ...(options.workspaceTrust === true ? [] : ['--disable-workspace-trust']),
    '--disable-getting-started-override',
    ...(options.locale ? ['--locale', options.locale] : []),
    workspace,
  ];
  let log = '';
  // its own process group, so that closing it also ends what it started (extension host, language server, debuggee)
  const child: ChildProcess = spawn(CODE_SERVER, args, {
    env: codeServerEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  child.stdout?.on('data', (chunk: Buffer) => (log += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (log += chunk.toString()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`code-server did not start:\n${log}`)), 60_000);
    const check = () => {
      if (/HTTP server listening/.test(log)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout?.on('data', check);
    child.stderr?.on('data', check);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`code-server exited with ${String(code)}:\n${log}`));
    });
  });

  const browser: Browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  const context = await browser.newContext({
    viewport: { width: 1500, height: 950 },
    locale: options.locale ?? 'en-US',
  });
  const page = await context.newPage();
  const url = `http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}`;
  await page.goto(url);
  await page.waitForSelector('.monaco-workbench', { timeout: 90_000 });

  return {
    page,
    workspace,
    url,
    serverLog: () => log,
    async screenshot(shot: string) {
      fs.mkdirSync(OUTPUT, { recursive: true });
      const file = path.join(OUTPUT, `${shot}.png`);
      await page.screenshot({ path: file }).catch(() => undefined);
      return file;
    },
    async close() {
      await browser.close().catch(() => undefined);
      const exited = new Promise((resolve) => {
        if (child.exitCode !== null) resolve(undefined);
        else child.once('exit', resolve);
      });
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGTERM');
      } catch {
        child.kill('SIGTERM'); // the group is gone already, or was never made
      }
      await exited;
      // a child of the group may still be flushing into the profile for a moment after the server exits
      fs.rmSync(root, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
    },
  };
}
