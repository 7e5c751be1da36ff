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
  /** Debug Training and Run Doctor write TensorBoard event files under `tensorboardLogDir`. */
  tensorboardLogRuns: boolean;
  /** Seconds Run Doctor lets the script run before it stops it for a partial report; 0: no limit. */
  doctorTimeout: number;
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
    tensorboardLogRuns: config.get<boolean>('tensorboard.logRuns', false),
    doctorTimeout: Math.max(0, config.get<number>('doctor.timeout', 600) || 0),
  };
}

/** Settings whose change means the language server must restart. */
export const SERVER_SETTINGS = ['tensorsight.python', 'tensorsight.server.enabled'] as const;
