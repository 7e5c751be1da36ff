/**
 * A small, behaving fake of extension/src/common/vscodeapi.ts for the unit tests: real value classes (Uri, Range,
 * SourceBreakpoint, EventEmitter...), and window/workspace/debug objects whose answers the test scripts through
 * `fake` and whose effects (messages, breakpoints, setting updates) it records there.
 */
import * as path from 'node:path';

export class EventEmitter<T> {
  private listeners: Array<(value: T) => void> = [];
  readonly event = (listener: (value: T) => void) => {
    this.listeners.push(listener);
    return { dispose: () => (this.listeners = this.listeners.filter((l) => l !== listener)) };
  };
  fire(value: T): void {
    for (const listener of [...this.listeners]) listener(value);
  }
  dispose(): void {
    this.listeners = [];
  }
}

export class Uri {
  private constructor(
    readonly scheme: string,
    readonly fsPath: string,
  ) {}
  static file(p: string): Uri {
    return new Uri('file', path.resolve(p));
  }
  static parse(value: string): Uri {
    return new Uri(value.split(':')[0] ?? 'file', value);
  }
  toString(): string {
    return this.scheme === 'file' ? `file://${this.fsPath}` : this.fsPath;
  }
}

export class PositionClass {
  constructor(
    readonly line: number,
    readonly character: number,
  ) {}
  translate(lineDelta: number, characterDelta: number): PositionClass {
    return new PositionClass(this.line + lineDelta, this.character + characterDelta);
  }
}
export class Range {
  constructor(
    readonly start: PositionClass,
    readonly end: PositionClass,
  ) {}
}
export class Selection extends Range {}
export class Location {
  constructor(
    readonly uri: Uri,
    readonly range: Range | PositionClass,
  ) {}
}
export class MarkdownString {
  isTrusted?: boolean | { enabledCommands: string[] };
  constructor(
    readonly value: string,
    readonly supportThemeIcons?: boolean,
  ) {}
}
export class Hover {
  constructor(
    readonly contents: MarkdownString,
    readonly range?: Range,
  ) {}
}
export class SourceBreakpoint {
  readonly location: { uri: Uri; range: Range };
  constructor(
    location: Location,
    readonly enabled: boolean,
    readonly condition?: string,
  ) {
    const start = location.range instanceof Range ? location.range.start : location.range;
    this.location = { uri: location.uri, range: new Range(start, start) };
  }
}
export class DiagnosticClass {
  source?: string;
  code?: string;
  constructor(
    readonly range: Range,
    readonly message: string,
    readonly severity: number,
  ) {}
}
export class DebugAdapterExecutable {
  constructor(
    readonly command: string,
    readonly args: string[],
    readonly options?: { env?: Record<string, string>; cwd?: string },
  ) {}
}
export class DebugAdapterServer {
  constructor(
    readonly port: number,
    readonly host?: string,
  ) {}
}
export class ThemeColor {
  constructor(readonly id: string) {}
}
export const DiagnosticSeverity = { Error: 0, Warning: 1, Information: 2, Hint: 3 };
export const DebugConfigurationProviderTriggerKind = { Initial: 1, Dynamic: 2 };
export const ProgressLocation = { SourceControl: 1, Window: 10, Notification: 15 };
export const StatusBarAlignment = { Left: 1, Right: 2 };
export const ViewColumn = { Active: -1, Beside: -2, One: 1 };
export const ConfigurationTarget = { Global: 1, Workspace: 2, WorkspaceFolder: 3 };

interface FakeDocument {
  uri: Uri;
  languageId: string;
  isDirty: boolean;
  lineCount: number;
  lineAt(line: number): { text: string; range: Range };
  save(): Promise<boolean>;
}

export function fakeDocument(file: string, text: string, languageId = 'python'): FakeDocument {
  const lines = text.split('\n');
  return {
    uri: Uri.file(file),
    languageId,
    isDirty: false,
    lineCount: lines.length,
    lineAt: (line: number) => ({
      text: lines[line] ?? '',
      range: new Range(new PositionClass(line, 0), new PositionClass(line, (lines[line] ?? '').length)),
    }),
    save: () => Promise.resolve(true),
  };
}

/** What the test controls and observes. Reset with `fake.reset()` in each test. */
export const fake = {
  trusted: true,
  settings: new Map<string, unknown>(),
  userSettings: new Map<string, unknown>(),
  updates: [] as Array<{ key: string; value: unknown; target: unknown }>,
  activeEditor: undefined as undefined | { document: FakeDocument; selection: { active: PositionClass } },
  quickPick: (items: Array<{ label: string; condition?: string }>) =>
    Promise.resolve<{ label: string; condition?: string } | undefined>(items[0]),
  inputBox: () => Promise.resolve<string | undefined>(undefined),
  /** The folders "Choose Folder…" dialogs answer with (undefined: cancelled). */
  openDialog: undefined as string[] | undefined,
  openDialogs: [] as Array<Record<string, unknown>>,
  warningChoice: undefined as string | undefined,
  messages: [] as Array<{ level: 'info' | 'warning' | 'error'; text: string; items: string[] }>,
  breakpoints: [] as SourceBreakpoint[],
  executed: [] as Array<{ id: string; args: unknown[] }>,
  quickPickItems: [] as Array<{ label: string; condition?: string }>,
  /** The Call Stack's focused item (`debug.activeStackItem`): a stack frame has `frameId` and `session`. */
  activeStackItem: undefined as unknown,
  reset(): void {
    this.trusted = true;
    this.activeStackItem = undefined;
    this.settings.clear();
    this.userSettings.clear();
    this.updates = [];
    this.activeEditor = undefined;
    this.quickPick = (items) => Promise.resolve(items[0]);
    this.inputBox = () => Promise.resolve(undefined);
    this.openDialog = undefined;
    this.openDialogs = [];
    this.warningChoice = undefined;
    this.messages = [];
    this.breakpoints = [];
    this.executed = [];
    this.quickPickItems = [];
  },
};

function format(message: string, args: Array<string | number | boolean>): string {
  // as VS Code's l10n.t: a placeholder without its value stays (a template filled later)
  return message.replace(/\{(\d+)\}/g, (whole, index: string) => {
    const value = args[Number(index)];
    return value === undefined ? whole : String(value);
  });
}

export const l10n = { t: (message: string, ...args: Array<string | number | boolean>) => format(message, args) };

function message(level: 'info' | 'warning' | 'error') {
  return (text: string, ...items: string[]) => {
    fake.messages.push({ level, text, items });
    return Promise.resolve(level === 'warning' ? fake.warningChoice : undefined);
  };
}

export const window = {
  createOutputChannel: () => logChannel(),
  showInformationMessage: message('info'),
  showWarningMessage: message('warning'),
  showErrorMessage: message('error'),
  showModalWarning: (text: string, detail: string, ...items: string[]) => {
    fake.messages.push({ level: 'warning', text: `${text} ${detail}`, items });
    return Promise.resolve(fake.warningChoice);
  },
  showQuickPick: (items: Array<{ label: string; condition?: string }>) => {
    fake.quickPickItems = items;
    return fake.quickPick(items);
  },
  showInputBox: () => fake.inputBox(),
  showOpenDialog: (options: Record<string, unknown>) => {
    fake.openDialogs.push(options);
    return Promise.resolve(fake.openDialog?.map((folder) => Uri.file(folder)));
  },
  activeTextEditor: () => fake.activeEditor,
  setStatusBarMessage: () => ({ dispose: () => undefined }),
  createTerminal: () => ({ show: () => undefined, sendText: () => undefined }),
};

export function logChannel() {
  const lines: string[] = [];
  const add = (level: string) => (text: string) => lines.push(`${level} ${text}`);
  return {
    lines,
    info: add('info'),
    warn: add('warn'),
    error: add('error'),
    show: () => undefined,
    dispose: () => undefined,
  };
}

export const workspace = {
  isTrusted: () => fake.trusted,
  getConfiguration: () => ({
    get: <T>(key: string, defaultValue?: T): T | undefined =>
      fake.settings.has(key) ? (fake.settings.get(key) as T) : defaultValue,
    inspect: <T>(key: string) => ({
      defaultValue: undefined as T | undefined,
      globalValue: fake.userSettings.get(key) as T,
    }),
    update: (key: string, value: unknown, target: unknown) => {
      fake.updates.push({ key, value, target });
      fake.settings.set(key, value);
      return Promise.resolve();
    },
  }),
  workspaceFolders: () => undefined,
  getWorkspaceFolder: () => undefined,
};

/** Fire these to simulate VS Code starting and ending debug sessions. */
export const debugStarted = new EventEmitter<unknown>();
export const debugTerminated = new EventEmitter<unknown>();

export const debug = {
  breakpoints: () => fake.breakpoints,
  addBreakpoints: (list: SourceBreakpoint[]) => fake.breakpoints.push(...list),
  removeBreakpoints: (list: SourceBreakpoint[]) => {
    fake.breakpoints = fake.breakpoints.filter((bp) => !list.includes(bp));
  },
  activeStackItem: () => fake.activeStackItem,
  onDidStartDebugSession: (listener: (session: unknown) => void) => debugStarted.event(listener),
  onDidTerminateDebugSession: (listener: (session: unknown) => void) => debugTerminated.event(listener),
};

export const commands = {
  executeCommand: (id: string, ...args: unknown[]) => {
    fake.executed.push({ id, args });
    return Promise.resolve(undefined);
  },
};

export const extensions = { getExtension: () => undefined };
export const env = { language: () => 'en', openExternal: () => Promise.resolve(true), uriScheme: () => 'vscode' };
