/** Reading the CLI tools' JSON (findings, tables), including a real doctor run on a test program. */
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { describe, test } from 'node:test';
import {
  findingsByFile,
  isMissingSubcommand,
  parseToolOutput,
  readFindings,
  readReport,
  readTables,
} from '../../extension/src/commands/cliResults';
import { runProcess } from '../../extension/src/common/process';
import { PYHELPERS, REPO, VENV_PYTHON } from './support/paths';

describe('parseToolOutput', () => {
  test('whole-document, pretty-printed after noise, or last JSON line', () => {
    assert.deepEqual(parseToolOutput('{"findings": []}'), { findings: [] });
    assert.deepEqual(parseToolOutput('epoch 1\nepoch 2\n{\n  "findings": [],\n  "x": 1\n}\n'), { findings: [], x: 1 });
    assert.deepEqual(parseToolOutput('noise {\n{"a": 1}\n'), { a: 1 });
    assert.equal(parseToolOutput('Traceback (most recent call last):'), undefined);
    assert.equal(parseToolOutput('[1, 2]'), undefined, 'a report is an object');
  });
});

describe('readFindings', () => {
  test('keeps valid findings, normalises severity and line', () => {
    const findings = readFindings({
      findings: [
        { kind: 'nonfinite', severity: 'error', message: 'loss is NaN', file: '/w/t.py', line: 12, step: 4 },
        { kind: 'device', severity: 'bogus', message: 'cpu vs cuda', file: '/w/t.py', line: 0 },
        { severity: 'error', file: '/w/t.py', line: 3 },
        'not a finding',
      ],
    });
    assert.deepEqual(findings, [
      { kind: 'nonfinite', severity: 'error', message: 'loss is NaN', file: '/w/t.py', line: 12, step: 4 },
      { kind: 'device', severity: 'info', message: 'cpu vs cuda', file: '/w/t.py', line: 1 },
    ]);
    assert.deepEqual(readFindings({}), []);
  });

  test('groups by file', () => {
    const grouped = findingsByFile([
      { kind: 'a', severity: 'info', message: 'm', file: '/x.py', line: 1 },
      { kind: 'b', severity: 'info', message: 'm', file: '/y.py', line: 1 },
      { kind: 'c', severity: 'info', message: 'm', file: '/x.py', line: 2 },
    ]);
    assert.deepEqual([...grouped.keys()], ['/x.py', '/y.py']);
    assert.equal(grouped.get('/x.py')?.length, 2);
  });
});

describe('readTables', () => {
  test('arrays of records become tables with file/line columns for jump-to-source', () => {
    const tables = readTables({
      findings: [{ kind: 'x' }],
      rows: [
        { function: 'forward', file: '/w/m.py', line: 10, cumtime: 1.5, nested: [1] },
        { function: 'load', file: '/w/d.py', line: 3, cumtime: 0.5, calls: 7 },
      ],
      total: 2.0,
    });
    assert.equal(tables.length, 1);
    const [table] = tables;
    assert.deepEqual(table?.columns, ['function', 'file', 'line', 'cumtime', 'nested', 'calls']);
    assert.deepEqual(table?.rows[1], ['load', '/w/d.py', 3, 0.5, null, 7]);
    assert.deepEqual(table?.rows[0]?.[4], '[1]', 'nested values are shown as compact JSON');
    assert.deepEqual(table?.rows[0]?.[5], null);
    assert.equal(table?.fileColumn, 1);
    assert.equal(table?.lineColumn, 2);
  });

  test('report summary keeps scalar fields', () => {
    const report = readReport({ findings: [], final_loss: 0.01, converged: true, error: 'boom', rows: [] });
    assert.deepEqual(report.summary, [
      ['final_loss', 0.01],
      ['converged', true],
    ]);
    assert.equal(report.error, 'boom');
  });
});

test('recognises argparse rejecting a subcommand', () => {
  const stderr = "python -m tensorsight: error: argument command: invalid choice: 'profile' (choose from 'doctor')";
  assert.ok(isMissingSubcommand(stderr, 'profile'));
  assert.ok(!isMissingSubcommand(stderr, 'doctor'));
});

test('a real `python -m tensorsight doctor --json` run parses into findings', async () => {
  const script = path.join(REPO, 'tests', 'programs', 'smoke.py');
  const result = await runProcess(VENV_PYTHON, ['-m', 'tensorsight', 'doctor', '--json', script], {
    cwd: REPO,
    env: { ...process.env, PYTHONPATH: PYHELPERS },
    timeoutMs: 120_000,
  });
  const document = parseToolOutput(result.stdout);
  assert.ok(document, `no JSON document in: ${result.stdout}\n${result.stderr}`);
  assert.ok(Array.isArray(document.findings));
  const findings = readFindings(document);
  assert.equal(findings.length, (document.findings as unknown[]).length, 'every finding of the doctor is valid');
});
