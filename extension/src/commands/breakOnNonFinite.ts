/**
 * "Toggle Break on NaN/Inf": flips the `tensorsight.breakOnNonFinite` setting (used by the next launches) and arms or
 * disarms the sentinel in every running TensorSight session at once, through a DAP `evaluate` without a frame, which
 * debugpy runs on its command thread even while the program runs.
 */
import { readSettings, SECTION } from '../common/settings';
import { ConfigurationTarget, l10n, type LogOutputChannel, window, workspace } from '../common/vscodeapi';
import type { AgentSessions } from '../debug/sessions';

/** The expression the agent understands (issue 3's runtime switch). */
export function breakOnNonFiniteExpression(enabled: boolean): string {
  return `tensorsight.break_on_nonfinite(${enabled ? 'True' : 'False'})`;
}

export async function toggleBreakOnNonFinite(sessions: AgentSessions, log: LogOutputChannel): Promise<boolean> {
  const enabled = !readSettings().breakOnNonFinite;
  await workspace.getConfiguration(SECTION).update('breakOnNonFinite', enabled, ConfigurationTarget.Global);
  const live = sessions.sessions();
  const failures: string[] = [];
  await Promise.all(
    live.map(async (session) => {
      try {
        await session.customRequest('evaluate', { expression: breakOnNonFiniteExpression(enabled), context: 'repl' });
      } catch (error) {
        failures.push(session.name);
        log.warn(`break-on-NaN toggle in "${session.name}": ${String(error)}`);
      }
    }),
  );
  const state = enabled ? l10n.t('armed') : l10n.t('off');
  const message =
    live.length > 0
      ? l10n.t('Break on NaN/Inf: {0} (applied to {1} running session(s)).', state, live.length - failures.length)
      : l10n.t('Break on NaN/Inf: {0}.', state);
  void window.showInformationMessage(message);
  if (failures.length > 0) {
    void window.showWarningMessage(l10n.t('Could not change break-on-NaN in: {0} (see the log).', failures.join(', ')));
  }
  return enabled;
}
