/**
 * A tool's findings in Problems (commands/toolProblems.ts): handed to the language server, which merges them with the
 * rules and the runs, and shown by the extension itself only when no server answers, one report at a time.
 */
import './support/seam';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Finding } from '../../extension/src/commands/cliResults';
import { ToolProblems } from '../../extension/src/commands/toolProblems';
import type { DiagnosticCollection } from '../../extension/src/common/vscodeapi';
import type { LanguageServer } from '../../extension/src/server/languageServer';
import type { DiagnosticClass } from './support/fakeVscode';

const ACCUMULATED: Finding = {
  kind: 'training-logic',
  severity: 'warning',
  message: 'loss is accumulated into total_loss across training steps with its autograd graph',
  file: '/w/train.py',
  line: 26,
  details: { code: 'TS104' },
};
const RETAINED: Finding = { ...ACCUMULATED, kind: 'memory', message: 'total_loss keeps every graph', details: {} };

function server(answer: unknown): Pick<LanguageServer, 'request'> & { calls: Array<[string, unknown]> } {
  const calls: Array<[string, unknown]> = [];
  return {
    calls,
    request: <R>(method: string, params: unknown) => {
      calls.push([method, params]);
      return Promise.resolve(answer as R | undefined);
    },
  };
}

function collection(): DiagnosticCollection & { shown: Map<string, DiagnosticClass[]> } {
  const shown = new Map<string, DiagnosticClass[]>();
  return {
    shown,
    set: (uri: { fsPath: string }, list: DiagnosticClass[]) => shown.set(uri.fsPath, list),
    clear: () => shown.clear(),
  } as unknown as DiagnosticCollection & { shown: Map<string, DiagnosticClass[]> };
}

describe('tool findings in Problems', () => {
  test('the server gets the report, details included, and the extension shows nothing of its own', async () => {
    const lsp = server({ accepted: 2 });
    const own = collection();
    own.shown.set('/w/older.py', []); // a report from before: dropped
    assert.equal(await new ToolProblems(lsp, own).publish('doctor', [ACCUMULATED, RETAINED]), 'server');
    assert.deepEqual(lsp.calls, [['tensorsight/toolFindings', { tool: 'doctor', findings: [ACCUMULATED, RETAINED] }]]);
    assert.equal(own.shown.size, 0);
  });

  test('without a server the latest report alone is shown, with the rule code', async () => {
    const own = collection();
    const problems = new ToolProblems(server(undefined), own);
    await problems.publish('doctor', [{ ...ACCUMULATED, file: '/w/other.py' }]);
    assert.equal(await problems.publish('doctor', [ACCUMULATED, RETAINED]), 'extension');
    assert.deepEqual([...own.shown.keys()], ['/w/train.py']); // the other file's older report is gone
    const shown = own.shown.get('/w/train.py') ?? [];
    assert.deepEqual(
      shown.map((d) => [d.code, d.range.start.line, d.source]),
      [
        ['TS104', 25, 'TensorSight (doctor)'],
        ['memory', 25, 'TensorSight (doctor)'],
      ],
    );
  });

  test("a finding's step and rank are said once, after its message, from the fields", async () => {
    const own = collection();
    const nan: Finding = { ...RETAINED, kind: 'dynamics', message: 'loss became NaN on this rank', step: 12, rank: 1 };
    await new ToolProblems(server(undefined), own).publish('doctor', [nan, ACCUMULATED]);
    const shown = own.shown.get('/w/train.py') ?? [];
    assert.deepEqual(
      shown.map((d) => d.message),
      ['loss became NaN on this rank (step 12, rank 1)', ACCUMULATED.message],
    );
  });
});
