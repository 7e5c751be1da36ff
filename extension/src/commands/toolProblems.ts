/**
 * Where a tool's findings (the doctor's, profile's, ...) go in Problems. The language server is the one place that
 * publishes them when it runs (`tensorsight/toolFindings`): it merges them with the rules' and the runs' findings,
 * so a bug that the rule, the doctor and a debug run all report is listed once. Only when the server is not running
 * does this extension show them in its own collection, and then only the latest report (older reports, of any file,
 * are dropped). Used by commands/cliTools.ts.
 */
import * as path from 'node:path';
import {
  DiagnosticClass,
  type DiagnosticCollection,
  DiagnosticSeverity,
  l10n,
  PositionClass,
  Range,
  Uri,
} from '../common/vscodeapi';
import type { LanguageServer } from '../server/languageServer';
import { Methods, parsePayload, type ToolFindingsParams } from '../server/protocol';
import { type Finding, type FindingLabels, findingsByFile, findingText } from './cliResults';

export type ProblemsOwner = 'server' | 'extension';

export class ToolProblems {
  constructor(
    private readonly server: Pick<LanguageServer, 'request'>,
    private readonly fallback: DiagnosticCollection,
  ) {}

  /** Publishes `tool`'s report, replacing its earlier one; says who shows it. */
  async publish(tool: string, findings: readonly Finding[]): Promise<ProblemsOwner> {
    const params: ToolFindingsParams = { tool, findings: [...findings] };
    const answer = await this.server.request<unknown>(Methods.toolFindings, params);
    this.fallback.clear(); // the server shows them now, or this report replaces every earlier one
    if (parsePayload('ToolFindingsResult', answer).ok) return 'server';
    for (const [file, list] of findingsByFile(findings)) {
      this.fallback.set(Uri.file(path.resolve(file)), list.map(toDiagnostic));
    }
    return 'extension';
  }
}

function toDiagnostic(finding: Finding): InstanceType<typeof DiagnosticClass> {
  const position = new PositionClass(finding.line - 1, 0);
  const diagnostic = new DiagnosticClass(
    new Range(position, position.translate(0, 1000)),
    findingText(finding, findingLabels()),
    finding.severity === 'error'
      ? DiagnosticSeverity.Error
      : finding.severity === 'warning'
        ? DiagnosticSeverity.Warning
        : DiagnosticSeverity.Information,
  );
  diagnostic.source = 'TensorSight (doctor)';
  const code = finding.details?.code;
  diagnostic.code = typeof code === 'string' ? code : kindCode(finding.kind);
  return diagnostic;
}

/** How a shown finding says its step and rank, in the display language (the results view uses them too). */
export function findingLabels(): FindingLabels {
  return { step: l10n.t('step {0}'), rank: l10n.t('rank {0}') };
}

/** A finding kind as Problems shows it in place of a rule code, in the display language (as the server does:
 * pyhelpers/tensorsight/server/diagnostics.py KIND_CODES). */
function kindCode(kind: string): string {
  const codes: Record<string, string> = {
    nonfinite: l10n.t('nonfinite'),
    shape: l10n.t('shape'),
    device: l10n.t('device'),
    leakage: l10n.t('leakage'),
    'training-logic': l10n.t('training-logic'),
    memory: l10n.t('memory'),
    performance: l10n.t('performance'),
    dynamics: l10n.t('dynamics'),
  };
  return codes[kind] ?? kind;
}
