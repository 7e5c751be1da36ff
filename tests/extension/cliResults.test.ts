/** Reading the CLI tools' JSON (findings, tables), including a real doctor run on a test program. */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, test } from 'node:test';
import {
  findingsByFile,
  findingText,
  isMissingSubcommand,
  parseToolOutput,
  readFindings,
  readReport,
  readTables,
} from '../../extension/src/commands/cliResults';
import { ENGLISH_LABELS } from '../../extension/src/commands/reportTables';
import { runProcess } from '../../extension/src/common/process';
import { PYHELPERS, REPO, VENV_PYTHON } from './support/paths';

describe('findingText', () => {
  test('the step and rank fields follow the message, in the labels given', () => {
    const finding = { kind: 'dynamics', severity: 'warning' as const, message: 'loss diverged', file: 'a.py', line: 3 };
    assert.equal(findingText(finding), 'loss diverged');
    assert.equal(findingText({ ...finding, step: 7 }), 'loss diverged (step 7)');
    assert.equal(
      findingText({ ...finding, step: 7, rank: 0 }, { step: 'paso {0}', rank: 'rank {0}' }),
      'loss diverged (paso 7, rank 0)',
    );
  });
});

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
  test('keeps the findings the contract accepts and drops the others, as the server does', () => {
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
    ]);
    const kept = { kind: 'device', severity: 'info', message: 'cpu vs cuda', file: '/w/t.py', line: 1 };
    assert.deepEqual(readFindings({ findings: [kept, { ...kept, line: 0 }, { ...kept, step: 'x' }] }), [kept]);
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

describe('readable profile and shape-map reports', () => {
  test('a profile reads as the time per phase and the top functions, with units, short paths and sort keys', () => {
    const report = readReport({
      script: '/w/train.py',
      steps_profiled: 4,
      warmup: 1,
      wall_s: 0.2,
      rows: [
        {
          function: '<built-in method torch._C._nn.linear>',
          label: 'torch._C._nn.linear',
          location: '(built-in)',
          file: null,
          line: 0,
          calls: 1200,
          own_s: 0.0123,
          cumulative_s: 0.0123,
          user: false,
        },
        {
          function: 'step',
          label: 'step',
          location: 'train.py:12',
          file: '/w/train.py',
          line: 12,
          calls: 4,
          own_s: 0.00004,
          cumulative_s: 0.15,
          user: true,
        },
      ],
      phases: {
        steps: 4,
        seconds: {},
        file: '/w/train.py',
        line: 10,
        breakdown: [
          { phase: 'data', ms_per_step: 30, percent: 60 },
          { phase: 'forward', ms_per_step: 10, percent: 20 },
          { phase: 'backward', ms_per_step: 9.5, percent: 19 },
          { phase: 'optimizer', ms_per_step: 0.5, percent: 1 },
          { phase: 'other', ms_per_step: 0, percent: 0 },
        ],
      },
      functions: [],
      missing_functions: [],
      notes: [],
      error: '',
    });
    assert.deepEqual(report.summary, [
      ['Steps profiled', 4],
      ['Warm-up steps', 1],
      ['Wall time', '0.20 s'],
      ['Time per step', '50.0 ms'],
    ]);
    assert.equal(report.error, undefined);
    const [phases, functions] = report.tables;
    assert.equal(phases?.title, 'Time per phase');
    assert.deepEqual(phases?.columns, ['Phase', 'Per step', 'Share']);
    assert.deepEqual(phases?.rows[0], ['Data loading', '30.0 ms', '60%']);
    assert.deepEqual(phases?.rows.at(-1), ['Whole step', '50.0 ms', '100%']);
    assert.deepEqual(phases?.locations?.[0], { file: '/w/train.py', line: 10 });
    assert.deepEqual(functions?.columns, ['Function', 'Location', 'Own time', 'Total time', 'Calls']);
    assert.deepEqual(functions?.rows, [
      ['torch._C._nn.linear', '(built-in)', '12.3 ms', '12.3 ms', '1,200'],
      ['step', 'train.py:12', '0.04 ms', '150 ms', '4'],
    ]);
    assert.deepEqual(functions?.sortKeys?.[1]?.slice(2), [0.00004, 0.15, 4], 'times sort as numbers, not as text');
    assert.deepEqual(functions?.locations, [null, { file: '/w/train.py', line: 12 }]);
    assert.deepEqual(functions?.highlight, [false, true]);
    assert.deepEqual(functions?.numericColumns, [2, 3, 4]);
  });

  test('a profile gives the time per step without the profiler, and says how much slower the profiled steps ran', () => {
    const report = readReport({
      script: '/w/train.py',
      steps_profiled: 4,
      steps_timed: 4,
      warmup: 1,
      wall_s: 0.2,
      timed_wall_s: 0.02,
      ms_per_step: 5,
      profiled_ms_per_step: 50,
      slowdown: 10,
      rows: [{ function: 'step', label: 'step', location: 'train.py:12', file: '/w/train.py', line: 12, calls: 4 }],
      phases: {
        steps: 4,
        profiler_off: true,
        seconds: {},
        breakdown: [{ phase: 'data', ms_per_step: 5, percent: 100 }],
      },
      functions: [],
      missing_functions: [],
      notes: [],
      error: '',
    });
    assert.deepEqual(report.summary.slice(3), [
      ['Time per step', '5.00 ms'],
      ['Time per step under cProfile', '50.0 ms (10.0× slower)'],
    ]);
    const [phases, functions] = report.tables;
    assert.equal(
      phases?.note,
      'Mean over 4 steps run without the profiler, as the training loop code lens measures them.',
    );
    assert.match(
      functions?.note ?? '',
      /^Times summed over the 4 profiled steps, under cProfile: 10\.0× slower than without;/,
    );
  });

  test('a shape map reads as one row per module in execution order, with labels in the given language', () => {
    const labels = { ...ENGLISH_LABELS, module: 'Módulo', shapeMapTitle: 'Mapa de formas de {0}' };
    const report = readReport(
      {
        script: '/w/train.py',
        model: 'Sequential',
        rows: [
          {
            path: '',
            type: 'Sequential',
            input_shapes: [[64, 8]],
            output_shapes: [[64, 1]],
            dtype: 'float32',
            params: 1474,
            trainable: 1474,
            memory_bytes: 0,
            depth: 0,
            module: 'Sequential',
            input_text: '[64, 8]',
            output_text: 'f32[64, 1]',
            memory_text: '0 B',
          },
          {
            path: '0',
            type: 'Linear',
            input_shapes: [[64, 8]],
            output_shapes: [[64, 32]],
            dtype: 'float32',
            params: 288,
            trainable: 288,
            memory_bytes: 1258291,
            depth: 1,
            file: '/w/train.py',
            line: 7,
            module: '0 (Linear)',
            input_text: '[64, 8]',
            output_text: 'f32[64, 32]',
            memory_text: '1.2 MiB',
          },
        ],
        totals: { params: 1474, trainable: 1400, memory_bytes: 1258291, memory_text: '1.2 MiB' },
      },
      labels,
    );
    assert.deepEqual(report.summary, [
      ['Model', 'Sequential'],
      ['Parameters', '1,474 (1,400 trainable)'],
      ['Memory for this batch', '1.2 MiB'],
    ]);
    const [table] = report.tables;
    assert.equal(report.tables.length, 1);
    assert.equal(table?.title, 'Mapa de formas de Sequential');
    assert.deepEqual(table?.columns, ['Módulo', 'Input shapes', 'Output shape', 'Parameters', 'Memory']);
    assert.deepEqual(table?.rows, [
      ['Sequential', '[64, 8]', 'f32[64, 1]', '1,474', '0 B'],
      ['\u00a0\u00a00 (Linear)', '[64, 8]', 'f32[64, 32]', '288', '1.2 MiB'],
    ]);
    assert.deepEqual(
      table?.sortKeys?.map((keys) => [keys[0], keys[4]]),
      [
        [0, 0],
        [1, 1258291],
      ],
      'the module column sorts back to execution order, memory as bytes',
    );
    assert.deepEqual(table?.locations, [null, { file: '/w/train.py', line: 7 }]);
    assert.ok(!JSON.stringify(report).includes('input_shapes'), 'no raw key is shown');
  });

  test('a failed shape map keeps the error and shows no table', () => {
    const report = readReport({ script: '/w/t.py', model: null, rows: [], error: 'the script finished without x' });
    assert.deepEqual(report.tables, []);
    assert.equal(report.error, 'the script finished without x');
  });

  test('real `profile --json` and `shapes --json` runs read without a raw key or a site-packages path', async () => {
    const env = { ...process.env, PYTHONPATH: PYHELPERS, OMP_NUM_THREADS: '1' };
    const script = path.join(REPO, 'examples', 'correct_training.py');
    const run = (...args: string[]) =>
      runProcess(VENV_PYTHON, ['-m', 'tensorsight', ...args, script], { cwd: REPO, env, timeoutMs: 240_000 });
    const [profiled, mapped] = await Promise.all([
      run('profile', '--json', '--steps', '3', '--top', '10'),
      run('shapes', '--json'),
    ]);
    const profile = readReport(parseToolOutput(profiled.stdout) ?? {});
    assert.deepEqual(
      profile.tables.map((t) => t.name),
      ['phases', 'functions'],
      profiled.stderr.slice(-2000),
    );
    const functions = profile.tables[1];
    const locations = functions?.rows.map((row) => String(row[1])) ?? [];
    assert.ok(
      locations.some((where) => /^torch\/[\w/]+\.py:\d+$/.test(where)),
      locations.join('\n'),
    );
    assert.ok(!locations.some((where) => where.includes('site-packages')), locations.join('\n'));
    assert.ok(functions?.rows.every((row) => / ms$/.test(String(row[3]))));
    const shapes = readReport(parseToolOutput(mapped.stdout) ?? {});
    assert.deepEqual(
      shapes.tables[0]?.rows.map((row) => [String(row[0]).trim(), row[2]]),
      [
        ['Sequential', 'f32[64, 2]'],
        ['0 (Linear)', 'f32[64, 64]'],
        ['1 (ReLU)', 'f32[64, 64]'],
        ['2 (Linear)', 'f32[64, 2]'],
      ],
    );
    assert.deepEqual(shapes.summary[1], ['Parameters', '1,474 (1,474 trainable)']);
  });
});

/** The 1-based line of the first line of `file` that contains `text` (so a test follows edits of the program). */
function lineOf(file: string, text: string): number {
  const index = fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .findIndex((line) => line.includes(text));
  assert.ok(index >= 0, `${text} not in ${file}`);
  return index + 1;
}

describe('overfit results', () => {
  const RAW_KEYS = ['model_file', 'model_line', 'loss_file', 'initial_loss', 'final_loss', 'best_loss', 'passed', 'lr'];
  const overfit = (script: string) =>
    runProcess(VENV_PYTHON, ['-m', 'tensorsight', 'overfit', '--json', path.join(REPO, 'tests', 'programs', script)], {
      cwd: REPO,
      env: { ...process.env, PYTHONPATH: PYHELPERS, OMP_NUM_THREADS: '1' },
      timeoutMs: 240_000,
    });

  test('a real run on a hand-written loss reads as labelled lines and a clickable model/loss table', async () => {
    const result = await overfit('hand_loss/train.py');
    const report = readReport(parseToolOutput(result.stdout) ?? {});
    const labels = report.summary.map(([label]) => label);
    assert.deepEqual(labels.slice(0, 4), ['Verdict', 'Model', 'Loss', 'Loss on the batch'], result.stderr.slice(-2000));
    assert.ok(
      !labels.some((label) => RAW_KEYS.includes(label) || label === 'script' || label === 'tool'),
      labels.join(),
    );
    assert.deepEqual(report.summary[0], ['Verdict', 'Passed: the loss approached zero']);
    const program = path.join(REPO, 'tests', 'programs', 'hand_loss');
    const modelLine = lineOf(path.join(program, 'train.py'), 'logits = model(inputs)');
    const lossLine = lineOf(path.join(program, 'losses.py'), 'return -(onehot * torch.log(probs))');
    assert.deepEqual(report.summary[2], ['Loss', `soft_cross_entropy() (losses.py:${lossLine})`]);
    assert.equal(report.error, undefined);
    const where = report.tables[0];
    assert.deepEqual(
      where?.rows.map((row) => row[2]),
      [`train.py:${modelLine}`, `losses.py:${lossLine}`],
    );
    assert.equal(where?.locations?.[1]?.file, path.join(REPO, 'tests', 'programs', 'hand_loss', 'losses.py'));
  });

  test('a script it cannot replay says the check could not run, not that the script failed', async () => {
    const result = await overfit('overfit_custom/grad_by_hand.py');
    const report = readReport(parseToolOutput(result.stdout) ?? {});
    assert.equal(report.errorTitle, ENGLISH_LABELS.overfitError);
    assert.match(report.error ?? '', /no loss\.backward\(\) after the model call at grad_by_hand\.py:\d+/);
    assert.ok(!report.summary.some(([label]) => RAW_KEYS.includes(label) || label === 'script_failed'));
  });
});
