/** Interpreter resolution order (pure, with a fake provider) and the probe against real interpreters. */
import './support/seam';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  type InterpreterProvider,
  isSupportedVersion,
  parseProbeOutput,
  type ProbeResult,
  resolveInterpreter,
} from '../../extension/src/common/interpreter';
import { findOnPath, probeInterpreter } from '../../extension/src/common/environment';
import { BUNDLED_LIBS, VENV_PYTHON } from './support/paths';

const WORKS: ProbeResult = { ok: true, version: '3.11.9', missing: [] };

function provider(options: {
  setting?: string;
  pythonExtension?: string;
  onPath?: Record<string, string>;
  probes?: Record<string, ProbeResult>;
}): InterpreterProvider & { probed: string[] } {
  const probed: string[] = [];
  return {
    probed,
    setting: () => options.setting,
    pythonExtension: () => Promise.resolve(options.pythonExtension),
    findOnPath: (name) => options.onPath?.[name],
    probe: (command) => {
      probed.push(command);
      return Promise.resolve(options.probes?.[command] ?? WORKS);
    },
  };
}

describe('resolveInterpreter', () => {
  test('the setting wins over the Python extension and PATH', async () => {
    const p = provider({
      setting: '/opt/py/bin/python',
      pythonExtension: '/ext/python',
      onPath: { python3: '/usr/bin/python3' },
    });
    const result = await resolveInterpreter(p, true);
    assert.deepEqual(result, { ok: true, command: '/opt/py/bin/python', source: 'setting', version: '3.11.9' });
    assert.deepEqual(p.probed, ['/opt/py/bin/python']);
  });

  test('without a setting, the Python extension interpreter comes before PATH', async () => {
    const p = provider({ setting: '  ', pythonExtension: '/ext/python', onPath: { python3: '/usr/bin/python3' } });
    const result = await resolveInterpreter(p, true);
    assert.equal(result.ok && result.source, 'pythonExtension');
  });

  test('an untrusted workspace skips the Python extension (it may point into the workspace)', async () => {
    const p = provider({ pythonExtension: '/workspace/.venv/bin/python', onPath: { python3: '/usr/bin/python3' } });
    const result = await resolveInterpreter(p, false);
    assert.deepEqual(result.ok && [result.command, result.source], ['/usr/bin/python3', 'path']);
    assert.ok(!p.probed.includes('/workspace/.venv/bin/python'));
  });

  test('falls back to `python` when there is no python3', async () => {
    const result = await resolveInterpreter(provider({ onPath: { python: '/usr/bin/python' } }), true);
    assert.equal(result.ok && result.command, '/usr/bin/python');
  });

  test('a broken setting is an error, not a silent fallback', async () => {
    const p = provider({
      setting: '/nope/python',
      onPath: { python3: '/usr/bin/python3' },
      probes: { '/nope/python': { ok: false, missing: [], error: 'spawn /nope/python ENOENT' } },
    });
    const result = await resolveInterpreter(p, true);
    assert.equal(result.ok, false);
    assert.equal(!result.ok && result.problem, 'settingBroken');
    assert.match(!result.ok ? result.detail : '', /ENOENT/);
  });

  test('a broken Python extension interpreter falls through to PATH', async () => {
    const p = provider({
      pythonExtension: '/ext/python',
      onPath: { python3: '/usr/bin/python3' },
      probes: { '/ext/python': { ok: false, missing: [], error: 'crashed' } },
    });
    const result = await resolveInterpreter(p, true);
    assert.equal(result.ok && result.command, '/usr/bin/python3');
  });

  test('missing debugpy and too-old Python are reported as such', async () => {
    const missing = await resolveInterpreter(
      provider({
        onPath: { python3: '/usr/bin/python3' },
        probes: { '/usr/bin/python3': { ok: true, version: '3.12.1', missing: ['debugpy'] } },
      }),
      true,
    );
    assert.deepEqual(!missing.ok && [missing.problem, missing.detail], ['missingModules', 'debugpy']);
    const old = await resolveInterpreter(
      provider({
        onPath: { python3: '/usr/bin/python3' },
        probes: { '/usr/bin/python3': { ok: false, version: '3.8.10', missing: [] } },
      }),
      true,
    );
    assert.deepEqual(!old.ok && [old.problem, old.detail], ['tooOld', 'Python 3.8.10']);
  });

  test('nothing anywhere: notFound', async () => {
    const result = await resolveInterpreter(provider({}), true);
    assert.equal(!result.ok && result.problem, 'notFound');
  });
});

describe('probe', () => {
  test('version check', () => {
    assert.ok(isSupportedVersion('3.10.0'));
    assert.ok(isSupportedVersion('3.13.1'));
    assert.ok(isSupportedVersion('4.0.0'));
    assert.ok(!isSupportedVersion('3.9.18'));
    assert.ok(!isSupportedVersion('2.7.18'));
    assert.ok(!isSupportedVersion('garbage'));
  });

  test('parses the probe line, ignoring earlier output', () => {
    const result = parseProbeOutput(
      'warning\n{"version": "3.11.2", "executable": "/x/python", "missing": ["debugpy"]}\n',
      '',
      0,
    );
    assert.deepEqual(result, { ok: true, version: '3.11.2', executable: '/x/python', missing: ['debugpy'] });
    const old = parseProbeOutput('{"version": "3.9.1", "executable": "/x", "missing": []}', '', 0);
    assert.equal(old.ok, false);
    assert.match(old.error ?? '', /older than 3\.10/);
    const crashed = parseProbeOutput('', 'Traceback...\nSyntaxError: x', 1);
    assert.deepEqual([crashed.ok, crashed.error], [false, 'Traceback...\nSyntaxError: x']);
  });

  test('probes the real repository interpreter: works, debugpy importable from the bundle', async () => {
    const result = await probeInterpreter(VENV_PYTHON, BUNDLED_LIBS);
    assert.equal(result.ok, true, result.error);
    assert.match(result.version ?? '', /^3\.\d+\.\d+$/);
    assert.deepEqual(result.missing, []);
  });

  test('a missing executable gives a failed probe with the reason', async () => {
    const result = await probeInterpreter('/definitely/not/python3', BUNDLED_LIBS);
    assert.equal(result.ok, false);
    assert.match(result.error ?? '', /ENOENT/);
  });

  test('findOnPath finds executables only', () => {
    const found = findOnPath('sh', '/nonexistent:/bin:/usr/bin');
    assert.ok(found === '/bin/sh' || found === '/usr/bin/sh');
    assert.equal(findOnPath('passwd', '/etc'), undefined); // a file, but not executable
    assert.equal(findOnPath('sh', ''), undefined);
  });
});
