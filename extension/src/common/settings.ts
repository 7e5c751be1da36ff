/**
 * Typed access to the `tensorsight.*` settings. Settings that name something to execute are read from the user
 * level only while the workspace is untrusted (VS Code also restricts them via `restrictedConfigurations`; this is
 * the belt to that pair of braces).
 */
import { DEBUG_TRAINING_DEFAULTS } from '../server/protocol';
import { workspace } from './vscodeapi';

export const SECTION = 'tensorsight';

export interface Settings {
  python: string | undefined;
  breakOnNonFinite: boolean;
  /** "Debug Training" steps over library code (torch, site-packages) unless a configuration says `justMyCode`. */
  justMyCode: boolean;
  injectIntoPythonDebugger: boolean;
  serverEnabled: boolean;
  statusBarGpu: boolean;
  tensorboardLogDir: string;
}

export function readSettings(): Settings {
  const config = workspace.getConfiguration(SECTION);
  const trusted = workspace.isTrusted();
  const python = config.inspect<string>('python');
  return {
    python: trusted ? config.get<string>('python') : (python?.globalValue ?? python?.defaultValue),
    breakOnNonFinite: config.get<boolean>('breakOnNonFinite', true),
    justMyCode: config.get<boolean>('justMyCode', DEBUG_TRAINING_DEFAULTS.justMyCode),
    injectIntoPythonDebugger: config.get<boolean>('injectIntoPythonDebugger', true),
    serverEnabled: config.get<boolean>('server.enabled', true),
    statusBarGpu: config.get<boolean>('statusBar.gpu', true),
    tensorboardLogDir: config.get<string>('tensorboard.logDir', 'runs'),
  };
}

/** Settings whose change means the language server must restart. */
export const SERVER_SETTINGS = ['tensorsight.python', 'tensorsight.server.enabled'] as const;
