/**
 * "Debug Training": the DebugConfigurationProvider of our `tensorsight` debug type (the dynamic configuration, F5
 * without launch.json, launch.json entries still holding snippet syntax, final resolution into a debugpy launch
 * request with the agent injected, or into a debugpy attach request that carries the agent's settings to a process
 * already running; the initial launch.json entry is the manifest's `initialConfigurations`),
 * and the adapter factory that runs `python -m debugpy.adapter` from the bundled debugpy. Also injects the agent
 * into the Microsoft Python extension's plain `debugpy` sessions when `tensorsight.injectIntoPythonDebugger` is on.
 */
import * as path from 'node:path';
import type { InterpreterService } from '../common/interpreterService';
import type { ExtensionPaths } from '../common/paths';
import { prependPath } from '../common/process';
import { isolatedLaunch } from '../common/pythonLaunch';
import { readSettings } from '../common/settings';
import {
  DebugAdapterExecutable,
  DebugAdapterServer,
  type DebugAdapterDescriptor,
  type DebugAdapterDescriptorFactory,
  type DebugConfiguration,
  type DebugConfigurationProvider,
  type DebugSession,
  env,
  l10n,
  type LogOutputChannel,
  window,
  workspace,
  type WorkspaceFolder,
} from '../common/vscodeapi';
import {
  agentEnvironment,
  type AttachEndpoint,
  attachEndpoint,
  attachProblem,
  type AttachProblem,
  DEBUG_TYPE,
  launchForFile,
  launchOptions,
  launchProblem,
  repairSnippetSyntax,
  SESSION_ID_KEY,
  type TensorSightLaunchConfig,
  toDebugpyAttach,
  toDebugpyLaunch,
} from './launchConfig';
import { withTensorBoardLogging } from '../commands/tensorboardLogging';
import { EXTENSION_ID, viewLinkStart } from '../panel/tensorLink';
import type { AgentSessions } from './sessions';
import {
  type DistributedLaunchConfig,
  isLoopbackHost,
  toTorchrunLaunch,
  torchrunProblem,
  workerAttachEndpoint,
} from './torchrun';

/** Remote debugpy endpoints the user agreed to attach to in this window (`host:port`, `listen host:port`). */
const approvedRemoteEndpoints = new Set<string>();

/**
 * Whether an attach may go ahead: never in an untrusted workspace; at once for loopback (debugpy's own child session
 * for a process it follows, a run waiting on this machine); for another host only once the user confirmed it, since
 * a launch.json can name any host and attaching lets that debugger drive this editor's session (`connect`), or lets
 * any machine that reaches the address connect to it (`listen` on a non-loopback interface).
 */
async function approveAttach(
  endpoint: Pick<AttachEndpoint, 'host' | 'port'>,
  mode: AttachEndpoint['mode'] = 'connect',
): Promise<boolean> {
  if (!workspace.isTrusted()) {
    void window.showWarningMessage(l10n.t('TensorSight does not run code in an untrusted workspace.'));
    return false;
  }
  if (isLoopbackHost(endpoint.host)) return true;
  const address = `${endpoint.host}:${endpoint.port}`;
  const approval = mode === 'connect' ? address : `listen ${address}`; // the adapter factory checks connects
  if (approvedRemoteEndpoints.has(approval)) return true;
  const button = mode === 'connect' ? l10n.t('Connect') : l10n.t('Listen');
  const choice =
    mode === 'connect'
      ? await window.showModalWarning(
          l10n.t('Attach to the debugger at {0}?', address),
          l10n.t('This configuration connects to another machine. Attach only to a debugger you started yourself.'),
          button,
        )
      : await window.showModalWarning(
          l10n.t('Wait for a debugger to connect on {0}?', address),
          l10n.t(
            'This configuration accepts a connection from another machine. Use it only on a network you trust, for a process you started yourself.',
          ),
          button,
        );
  if (choice !== button) return false;
  approvedRemoteEndpoints.add(approval);
  return true;
}

/** The message for an attach entry that cannot be used, naming what to fix. */
function attachMessage(problem: AttachProblem): string {
  switch (problem) {
    case 'endpoint':
      return l10n.t(
        '"Debug Training" attach needs "connect": {"host": "127.0.0.1", "port": 5678} (a process started with "python -m tensorsight watch" or "python -m debugpy --listen"), or "listen": {"host", "port"} for a process that connects back.',
      );
    case 'both':
      return l10n.t('"Debug Training" attach takes "connect" or "listen", not both.');
    case 'host':
      return l10n.t('"Debug Training" attach: "host" must be a host name or address, such as "127.0.0.1".');
    case 'port':
      return l10n.t('"Debug Training" attach: "port" must be a whole number from 1 to 65535, such as 5678.');
    case 'pathMappings':
      return l10n.t(
        '"Debug Training" attach: "pathMappings" must be a list of {"localRoot": "…", "remoteRoot": "…"}, both paths as strings.',
      );
  }
}

export class TrainingConfigurationProvider implements DebugConfigurationProvider {
  constructor(
    private readonly paths: ExtensionPaths,
    private readonly interpreters: InterpreterService,
    private readonly sessions: AgentSessions,
    private readonly log: LogOutputChannel,
  ) {}

  // No provideDebugConfigurations: "create a launch.json file" writes the manifest's `initialConfigurations` followed
  // by whatever an initial provider returns, so providing one here too wrote the same entry twice.

  /** The dynamic configuration offered in the Run view: debug the active Python file. */
  dynamicConfigurations(folder: WorkspaceFolder | undefined): DebugConfiguration[] {
    const editor = window.activeTextEditor();
    if (!editor || editor.document.languageId !== 'python' || editor.document.uri.scheme !== 'file') return [];
    const file = editor.document.uri.fsPath;
    const cwd = folder?.uri.fsPath ?? workspace.getWorkspaceFolder(editor.document.uri)?.uri.fsPath;
    return [launchForFile(l10n.t('Debug Training: {0}', path.basename(file)), file, cwd ?? path.dirname(file))];
  }

  /** F5 with no launch.json gives an empty configuration: debug the active Python file. */
  resolveDebugConfiguration(
    folder: WorkspaceFolder | undefined,
    config: DebugConfiguration,
  ): DebugConfiguration | undefined {
    if (workerAttachEndpoint(config)) return config; // a process debugpy follows (torchrun worker, DataLoader worker)
    if (!config.type && !config.request && !config.name) {
      const editor = window.activeTextEditor();
      if (!editor || editor.document.languageId !== 'python') {
        void window.showErrorMessage(l10n.t('Open a Python file to debug it with "Debug Training".'));
        return undefined;
      }
      const file = editor.document.uri.fsPath;
      return launchForFile(l10n.t('Debug Training'), file, folder?.uri.fsPath ?? path.dirname(file));
    }
    return this.withoutSnippetSyntax(config);
  }

  /** A launch.json entry still carrying `^"…"` snippet text is read as the string it stands for, or refused. */
  private withoutSnippetSyntax(config: DebugConfiguration): DebugConfiguration | undefined {
    const { config: repaired, repaired: fields, unusable } = repairSnippetSyntax(config);
    if (unusable.length > 0) {
      void window.showErrorMessage(
        l10n.t(
          '"Debug Training": {0} in launch.json holds snippet text starting with ^. Write a plain value such as "${file}".',
          unusable.map((f) => `"${f}"`).join(', '),
        ),
      );
      return undefined;
    }
    if (fields.length === 0) return config;
    const shown = fields.map((f) => `"${f}": "${String(repaired[f])}"`).join(', ');
    this.log.warn(`launch configuration "${config.name}": snippet syntax read as ${shown}`);
    void window.showWarningMessage(
      l10n.t(
        'launch.json: "{0}" holds snippet syntax (^"…"); it was read as {1}. Edit launch.json to write it that way.',
        config.name,
        shown,
      ),
    );
    return repaired;
  }

  async resolveDebugConfigurationWithSubstitutedVariables(
    _folder: WorkspaceFolder | undefined,
    config: DebugConfiguration,
  ): Promise<DebugConfiguration | undefined> {
    // A child session debugpy announced for a subprocess: it attaches to the running adapter, already injected.
    const worker = workerAttachEndpoint(config);
    if (worker) return (await approveAttach(worker)) ? config : undefined;
    if (!workspace.isTrusted()) {
      void window.showWarningMessage(l10n.t('TensorSight does not run code in an untrusted workspace.'));
      return undefined;
    }
    if (config.request === 'attach') return this.resolveAttach(config);
    const distributed = config as DistributedLaunchConfig;
    const distributedProblem = torchrunProblem(distributed);
    if (distributedProblem) {
      void window.showErrorMessage(l10n.t('"Debug Training": {0}', distributedProblem));
      return undefined;
    }
    const launch = toTorchrunLaunch(distributed);
    const problem = launchProblem(launch);
    if (problem) {
      void window.showErrorMessage(
        problem === 'request'
          ? l10n.t('"Debug Training" supports "request": "launch" or "attach".')
          : l10n.t('"Debug Training" needs a "program" (or "module") to run.'),
      );
      return undefined;
    }
    const python = await this.interpreters.require();
    if (!python) return undefined;
    const { sessionId, hub } = await this.sessions.open();
    const settings = readSettings();
    const defaults = { breakOnNonFinite: settings.breakOnNonFinite, justMyCode: settings.justMyCode };
    // `tensorsight.tensorboard.logRuns`: this run writes TensorBoard events (Open TensorBoard offers to turn it on).
    const resolved = toDebugpyLaunch(withTensorBoardLogging(launch), python, defaults, {
      pyhelpers: this.paths.pyhelpers,
      separator: path.delimiter,
      baseEnv: process.env,
      sessionId,
      hub,
      locale: env.language(),
      viewLink: viewLinkStart(env.uriScheme(), EXTENSION_ID, sessionId),
    });
    this.log.info(`Debug Training: ${resolved.program ?? resolved.module ?? ''} (session ${sessionId})`);
    return resolved;
  }

  /**
   * A launch.json attach entry: a process already running (waiting in `python -m tensorsight watch`, or started
   * with `python -m debugpy --listen`) gets the agent's settings in the attach request; debugpy's adapter, started
   * by TrainingAdapterFactory as for a launch, connects to it (or listens for it).
   */
  private async resolveAttach(config: TensorSightLaunchConfig): Promise<DebugConfiguration | undefined> {
    const problem = attachProblem(config);
    const endpoint = attachEndpoint(config);
    if (problem || !endpoint) {
      void window.showErrorMessage(attachMessage(problem ?? 'endpoint'));
      return undefined;
    }
    if (!(await approveAttach(endpoint, endpoint.mode))) return undefined;
    const { sessionId, hub } = await this.sessions.open();
    const settings = readSettings();
    const defaults = { breakOnNonFinite: settings.breakOnNonFinite, justMyCode: settings.justMyCode };
    const resolved = toDebugpyAttach(config, defaults, {
      sessionId,
      hub,
      locale: env.language(),
      viewLink: viewLinkStart(env.uriScheme(), EXTENSION_ID, sessionId),
    });
    // the request carries the hub's token: log where it goes, never the request
    this.log.info(`Debug Training: attach, ${endpoint.mode} ${endpoint.host}:${endpoint.port} (session ${sessionId})`);
    return resolved;
  }
}

/**
 * Runs debugpy's adapter with the bundled debugpy first on its path, isolated from the workspace, through
 * `tensorsight.debugpy_start.adapter` (debugpy's adapter without the environment report nobody logs), for a launch
 * and a launch.json attach entry alike (the adapter itself connects to the process, or listens for it). A child
 * session debugpy announced for a subprocess connects to the adapter already running instead.
 */
export class TrainingAdapterFactory implements DebugAdapterDescriptorFactory {
  constructor(
    private readonly paths: ExtensionPaths,
    private readonly interpreters: InterpreterService,
    private readonly log: LogOutputChannel,
  ) {}

  async createDebugAdapterDescriptor(session: DebugSession): Promise<DebugAdapterDescriptor | undefined> {
    const worker = workerAttachEndpoint(session.configuration);
    if (worker) {
      if (!isLoopbackHost(worker.host) && !approvedRemoteEndpoints.has(`${worker.host}:${worker.port}`)) {
        this.log.warn(`debug adapter: not attaching to ${worker.host}:${worker.port} (not confirmed)`);
        return undefined;
      }
      this.log.info(`debug adapter: subprocess ${worker.pid} via ${worker.host}:${worker.port}`);
      return new DebugAdapterServer(worker.port, worker.host);
    }
    const configured = (session.configuration as TensorSightLaunchConfig).python;
    const python = typeof configured === 'string' && configured ? configured : await this.interpreters.require();
    if (!python) return undefined;
    // The adapter's processes (launcher, debuggee) inherit PYTHONPATH and its working directory as before (a
    // configuration without `cwd` runs where the editor runs); the adapter itself imports only from `--path`.
    const env = { PYTHONPATH: prependPath(process.env.PYTHONPATH, [this.paths.bundledLibs], path.delimiter) };
    const launch = isolatedLaunch(
      python,
      this.paths.pyhelpers,
      {
        module: 'tensorsight.debugpy_start.adapter',
        searchPath: [this.paths.bundledLibs, this.paths.pyhelpers],
        chdir: process.cwd(),
      },
      env,
    );
    this.log.info(`debug adapter: ${launch.command} ${launch.args.join(' ')}`);
    return new DebugAdapterExecutable(launch.command, launch.args, { env: launch.env, cwd: launch.cwd });
  }
}

/**
 * For the Python extension's `debugpy` (and legacy `python`) types: adds the agent's environment to launch
 * requests. Attach requests cannot be injected (the process already runs) and are left alone.
 */
export class PythonDebuggerInjection implements DebugConfigurationProvider {
  constructor(
    private readonly paths: ExtensionPaths,
    private readonly sessions: AgentSessions,
    private readonly log: LogOutputChannel,
  ) {}

  async resolveDebugConfigurationWithSubstitutedVariables(
    _folder: WorkspaceFolder | undefined,
    config: DebugConfiguration,
  ): Promise<DebugConfiguration | undefined> {
    const settings = readSettings();
    if (!settings.injectIntoPythonDebugger || !workspace.isTrusted() || config.request !== 'launch') return config;
    if (config[SESSION_ID_KEY] !== undefined) return config;
    const launch = config as TensorSightLaunchConfig;
    const { sessionId, hub } = await this.sessions.open();
    const options = launchOptions(launch, settings.breakOnNonFinite);
    this.log.info(`injecting the agent into ${config.type} session "${config.name}" (session ${sessionId})`);
    return {
      ...config,
      env: agentEnvironment(launch.env, options, {
        pyhelpers: this.paths.pyhelpers,
        separator: path.delimiter,
        baseEnv: process.env,
        sessionId,
        hub,
        locale: env.language(),
        viewLink: viewLinkStart(env.uriScheme(), EXTENSION_ID, sessionId),
      }),
      [SESSION_ID_KEY]: sessionId,
    };
  }
}

export { DEBUG_TYPE };
