/**
 * TensorSight's entry point: wires the parts together and nothing else. Each concern lives in its own module:
 * interpreter (common/), language server (server/), "Debug Training" (debug/), commands (commands/), the training
 * panel, results view and tensor viewer (panel/) and the status bar (status/).
 */
import { createInterpreterProvider, watchPythonExtension } from './common/environment';
import { InterpreterService } from './common/interpreterService';
import { extensionPaths } from './common/paths';
import { SERVER_SETTINGS } from './common/settings';
import {
  commands,
  debug,
  DebugConfigurationProviderTriggerKind,
  type ExtensionContext,
  l10n,
  languages,
  window,
  workspace,
} from './common/vscodeapi';
import { toggleBreakOnNonFinite } from './commands/breakOnNonFinite';
import { CliTools } from './commands/cliTools';
import { ToolProblems } from './commands/toolProblems';
import { addTensorBreakpoint } from './commands/tensorBreakpoint';
import { TensorBoard } from './commands/tensorboard';
import { DEBUG_TYPE } from './debug/launchConfig';
import { PythonDebuggerInjection, TrainingAdapterFactory, TrainingConfigurationProvider } from './debug/provider';
import { AgentSessions } from './debug/sessions';
import { ResultsView } from './panel/resultsView';
import { TensorHover } from './panel/tensorHover';
import { TensorViewer } from './panel/tensorViewer';
import { TrainingPanel } from './panel/trainingPanel';
import { LanguageServer } from './server/languageServer';
import { StatusBar } from './status/statusBar';

let server: LanguageServer | undefined;

export function activate(context: ExtensionContext): void {
  const paths = extensionPaths(context.extensionUri.fsPath);
  const log = window.createOutputChannel('TensorSight');
  const interpreters = new InterpreterService(createInterpreterProvider(paths.bundledLibs), log);
  const statusBar = new StatusBar();
  const showLog = l10n.t('Show Log');
  server = new LanguageServer(
    paths,
    log,
    () => interpreters.resolve(),
    (detail) => {
      void window
        .showErrorMessage(l10n.t('The TensorSight language server stopped: {0}', detail), showLog)
        .then((c) => {
          if (c === showLog) log.show();
        });
    },
  );
  const languageServer = server;
  const sessions = new AgentSessions(languageServer, log);
  const panel = new TrainingPanel(paths);
  const results = new ResultsView(paths);
  const viewer = new TensorViewer(paths, log);
  const diagnostics = workspace.createDiagnosticCollection('tensorsight-doctor');
  const tools = new CliTools(paths, interpreters, new ToolProblems(languageServer, diagnostics), results, log);
  const tensorBoard = new TensorBoard(paths, interpreters, log);
  const configurations = new TrainingConfigurationProvider(paths, interpreters, sessions, log);

  context.subscriptions.push(
    log,
    statusBar,
    sessions,
    diagnostics,
    { dispose: () => panel.dispose() },
    { dispose: () => results.dispose() },
    { dispose: () => viewer.dispose() },
    ...viewer.listeners(),
    debug.registerDebugAdapterTrackerFactory('*', viewer.stopCounter()),
    window.registerUriHandler(viewer.uriHandler()),
    languages.registerHoverProvider({ language: 'python' }, new TensorHover()),
    { dispose: () => tensorBoard.dispose() },
    languageServer.onDidChangeState((state) => statusBar.setServerState(state, languageServer.failure)),
    languageServer.onGpu((gpu) => statusBar.setGpu(gpu)),
    languageServer.onRunEvent((params) => {
      panel.onRunEvent(params);
      const step = panel.run(params.sessionId)?.lastStep;
      if (step !== undefined) statusBar.setStep(step);
    }),
    sessions.onDidChange((count) => statusBar.setSessions(count)),
    debug.registerDebugConfigurationProvider(DEBUG_TYPE, configurations),
    debug.registerDebugConfigurationProvider(
      DEBUG_TYPE,
      { provideDebugConfigurations: (folder) => configurations.dynamicConfigurations(folder) },
      DebugConfigurationProviderTriggerKind.Dynamic,
    ),
    debug.registerDebugAdapterDescriptorFactory(DEBUG_TYPE, new TrainingAdapterFactory(paths, interpreters, log)),
    debug.registerDebugConfigurationProvider('debugpy', new PythonDebuggerInjection(paths, sessions, log)),
    debug.registerDebugConfigurationProvider('python', new PythonDebuggerInjection(paths, sessions, log)),
    commands.registerCommand('tensorsight.addTensorBreakpoint', () => addTensorBreakpoint(languageServer)),
    commands.registerCommand('tensorsight.toggleBreakOnNonFinite', () => toggleBreakOnNonFinite(sessions, log)),
    commands.registerCommand('tensorsight.showTrainingPanel', () => panel.show()),
    commands.registerCommand('tensorsight.viewTensor', (argument?: unknown) => viewer.viewTensor(argument)),
    commands.registerCommand('tensorsight.runDoctor', (file?: string) => tools.run('doctor', stringOrUndefined(file))),
    commands.registerCommand('tensorsight.profileTraining', () => tools.run('profile')),
    commands.registerCommand('tensorsight.checkShapes', () => tools.run('shapes')),
    commands.registerCommand('tensorsight.overfitOneBatch', () => tools.run('overfit')),
    commands.registerCommand('tensorsight.openTensorBoard', () => tensorBoard.open()),
    commands.registerCommand('tensorsight.restartServer', () => restart()),
    commands.registerCommand('tensorsight.showLog', () => log.show()),
    workspace.onDidChangeConfiguration((event) => {
      if (SERVER_SETTINGS.some((name) => event.affectsConfiguration(name))) void restart();
      if (event.affectsConfiguration('tensorsight.statusBar.gpu')) statusBar.render();
    }),
    workspace.onDidGrantWorkspaceTrust(() => {
      statusBar.render();
      interpreters.invalidate(); // restricted settings (tensorsight.python) apply from now on
      void languageServer.matchTrust(); // one restart, shared with a launch that waits for it (readyForLaunch)
    }),
  );

  function restart(): Promise<void> {
    interpreters.invalidate();
    return languageServer.restart();
  }

  void restart();
  void watchPythonExtension(() => void restart()).then((watch) => {
    if (watch) context.subscriptions.push(watch);
  });
}

export async function deactivate(): Promise<void> {
  await server?.dispose();
  server = undefined;
}

function stringOrUndefined(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}
