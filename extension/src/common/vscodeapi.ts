/**
 * The one seam between TensorSight and the `vscode` module.
 *
 * Every other module imports the editor API from here, never from 'vscode' directly, so the unit tests can replace
 * this single module with a fake (tests/extension/support/fakeVscode.ts) and run under plain Node.
 */
import * as vscode from 'vscode';
import { redactingChannel } from './redaction';

export type {
  CancellationToken,
  DebugAdapterDescriptor,
  DebugAdapterDescriptorFactory,
  DebugConfiguration,
  DebugConfigurationProvider,
  DebugAdapterTracker,
  DebugAdapterTrackerFactory,
  DebugSession,
  DebugStackFrame,
  Diagnostic,
  DiagnosticCollection,
  Disposable,
  Event,
  ExtensionContext,
  Hover as HoverResult,
  HoverProvider,
  LogOutputChannel,
  OutputChannel,
  Position,
  Progress,
  QuickPickItem,
  StatusBarItem,
  TextDocument,
  TextEditor,
  UriHandler,
  Webview,
  WebviewPanel,
  WorkspaceConfiguration,
  WorkspaceFolder,
} from 'vscode';

// Values (classes and enums) that our modules construct.
export const {
  DebugAdapterExecutable,
  DebugAdapterServer,
  Diagnostic: DiagnosticClass,
  DiagnosticSeverity,
  DebugConfigurationProviderTriggerKind,
  EventEmitter,
  Hover,
  Location,
  MarkdownString,
  Position: PositionClass,
  ProgressLocation,
  Range,
  Selection,
  SourceBreakpoint,
  StatusBarAlignment,
  ThemeColor,
  Uri,
  ViewColumn,
  ConfigurationTarget,
} = vscode;

export const l10n = {
  t: (message: string, ...args: Array<string | number | boolean>): string => vscode.l10n.t(message, ...args),
};

export const window = {
  // Redacted: no token reaches the channel, whatever writes to it (our code, the language client's traces).
  createOutputChannel: (name: string) => redactingChannel(vscode.window.createOutputChannel(name, { log: true })),
  createStatusBarItem: (id: string, alignment: vscode.StatusBarAlignment, priority: number) =>
    vscode.window.createStatusBarItem(id, alignment, priority),
  createWebviewPanel: (
    viewType: string,
    title: string,
    column: vscode.ViewColumn,
    options: vscode.WebviewOptions & vscode.WebviewPanelOptions,
  ) => vscode.window.createWebviewPanel(viewType, title, column, options),
  showInformationMessage: <T extends string>(message: string, ...items: T[]) =>
    vscode.window.showInformationMessage<T>(message, ...items),
  showWarningMessage: <T extends string>(message: string, ...items: T[]) =>
    vscode.window.showWarningMessage<T>(message, ...items),
  /** A modal warning (the user must answer it before anything else happens), for a choice with consequences. */
  showModalWarning: <T extends string>(message: string, detail: string, ...items: T[]) =>
    vscode.window.showWarningMessage<T>(message, { modal: true, detail }, ...items),
  showErrorMessage: <T extends string>(message: string, ...items: T[]) =>
    vscode.window.showErrorMessage<T>(message, ...items),
  showQuickPick: <T extends vscode.QuickPickItem>(items: T[], options: vscode.QuickPickOptions) =>
    vscode.window.showQuickPick<T>(items, options),
  showInputBox: (options: vscode.InputBoxOptions) => vscode.window.showInputBox(options),
  showOpenDialog: (options: vscode.OpenDialogOptions) => vscode.window.showOpenDialog(options),
  showTextDocument: (uri: vscode.Uri, options?: vscode.TextDocumentShowOptions) =>
    vscode.window.showTextDocument(uri, options),
  withProgress: <R>(
    options: vscode.ProgressOptions,
    task: (progress: vscode.Progress<{ message?: string }>, token: vscode.CancellationToken) => Thenable<R>,
  ) => vscode.window.withProgress(options, task),
  activeTextEditor: (): vscode.TextEditor | undefined => vscode.window.activeTextEditor,
  createTerminal: (name: string) => vscode.window.createTerminal(name),
  setStatusBarMessage: (text: string, hideAfterTimeout: number) =>
    vscode.window.setStatusBarMessage(text, hideAfterTimeout),
  onDidChangeActiveColorTheme: vscode.window.onDidChangeActiveColorTheme,
  /** Links of the editor's own scheme whose authority is this extension's id (`<scheme>://tensorsight.tensorsight/…`). */
  registerUriHandler: (handler: vscode.UriHandler) => vscode.window.registerUriHandler(handler),
};

export const workspace = {
  getConfiguration: (section?: string, scope?: vscode.ConfigurationScope) =>
    vscode.workspace.getConfiguration(section, scope),
  onDidChangeConfiguration: vscode.workspace.onDidChangeConfiguration,
  onDidGrantWorkspaceTrust: vscode.workspace.onDidGrantWorkspaceTrust,
  isTrusted: (): boolean => vscode.workspace.isTrusted,
  workspaceFolders: (): readonly vscode.WorkspaceFolder[] | undefined => vscode.workspace.workspaceFolders,
  getWorkspaceFolder: (uri: vscode.Uri) => vscode.workspace.getWorkspaceFolder(uri),
  createDiagnosticCollection: (name: string) => vscode.languages.createDiagnosticCollection(name),
};

export const debug = {
  registerDebugConfigurationProvider: (
    type: string,
    provider: vscode.DebugConfigurationProvider,
    trigger?: vscode.DebugConfigurationProviderTriggerKind,
  ) => vscode.debug.registerDebugConfigurationProvider(type, provider, trigger),
  registerDebugAdapterDescriptorFactory: (type: string, factory: vscode.DebugAdapterDescriptorFactory) =>
    vscode.debug.registerDebugAdapterDescriptorFactory(type, factory),
  addBreakpoints: (breakpoints: readonly vscode.Breakpoint[]) => vscode.debug.addBreakpoints(breakpoints),
  breakpoints: (): readonly vscode.Breakpoint[] => vscode.debug.breakpoints,
  removeBreakpoints: (breakpoints: readonly vscode.Breakpoint[]) => vscode.debug.removeBreakpoints(breakpoints),
  activeDebugSession: (): vscode.DebugSession | undefined => vscode.debug.activeDebugSession,
  /** The focused thread or stack frame of the Call Stack view (a frame has `frameId`). */
  activeStackItem: (): vscode.DebugThread | vscode.DebugStackFrame | undefined => vscode.debug.activeStackItem,
  onDidChangeActiveStackItem: vscode.debug.onDidChangeActiveStackItem,
  onDidStartDebugSession: vscode.debug.onDidStartDebugSession,
  onDidTerminateDebugSession: vscode.debug.onDidTerminateDebugSession,
  onDidReceiveDebugSessionCustomEvent: vscode.debug.onDidReceiveDebugSessionCustomEvent,
  registerDebugAdapterTrackerFactory: (type: string, factory: vscode.DebugAdapterTrackerFactory) =>
    vscode.debug.registerDebugAdapterTrackerFactory(type, factory),
};

export const commands = {
  registerCommand: (id: string, handler: (...args: never[]) => unknown) =>
    vscode.commands.registerCommand(id, handler as (...args: unknown[]) => unknown),
  executeCommand: <T = unknown>(id: string, ...args: unknown[]) => vscode.commands.executeCommand<T>(id, ...args),
};

export const languages = {
  registerHoverProvider: (selector: vscode.DocumentSelector, provider: vscode.HoverProvider) =>
    vscode.languages.registerHoverProvider(selector, provider),
};

export const extensions = {
  getExtension: (id: string) => vscode.extensions.getExtension(id),
};

export const env = {
  openExternal: (uri: vscode.Uri) => vscode.env.openExternal(uri),
  language: (): string => vscode.env.language,
  /** The editor's own URL scheme (`vscode`, `vscode-insiders`, `code-oss`…): its links reach `registerUriHandler`. */
  uriScheme: (): string => vscode.env.uriScheme,
};
