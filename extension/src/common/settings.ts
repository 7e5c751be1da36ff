/**
 * Typed access to the `tensorsight.*` settings. Settings that name something to execute are read from the user
 * level only while the workspace is untrusted (VS Code also restricts them via `restrictedConfigurations`; this is
 * the belt to that pair of braces).
 */
import { SETTING_DEFAULTS } from '../server/protocol';
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
    breakOnNonFinite: config.get<boolean>('breakOnNonFinite', SETTING_DEFAULTS.breakOnNonFinite),
    justMyCode: config.get<boolean>('justMyCode', SETTING_DEFAULTS.justMyCode),
    injectIntoPythonDebugger: config.get<boolean>(
      'injectIntoPythonDebugger',
      SETTING_DEFAULTS.injectIntoPythonDebugger,
    ),
    serverEnabled: config.get<boolean>('server.enabled', SETTING_DEFAULTS['server.enabled']),
    statusBarGpu: config.get<boolean>('statusBar.gpu', SETTING_DEFAULTS['statusBar.gpu']),
    tensorboardLogDir: config.get<string>('tensorboard.logDir', SETTING_DEFAULTS['tensorboard.logDir']),
    tensorboardLogRuns: config.get<boolean>('tensorboard.logRuns', SETTING_DEFAULTS['tensorboard.logRuns']),
    doctorTimeout: Math.max(0, config.get<number>('doctor.timeout', SETTING_DEFAULTS['doctor.timeout']) || 0),
  };
}

/** Settings whose change means the language server must restart. */
export const SERVER_SETTINGS = ['tensorsight.python', 'tensorsight.server.enabled'] as const;
