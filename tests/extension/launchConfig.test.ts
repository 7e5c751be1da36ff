/** "Debug Training" → debugpy launch request, and the agent's injection environment. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  agentEnvironment,
  launchForFile,
  launchOptions,
  launchProblem,
  SESSION_ID_KEY,
  type TensorSightLaunchConfig,
  toDebugpyLaunch,
} from '../../extension/src/debug/launchConfig';
import { AgentEnvironment, DEBUG_TRAINING_DEFAULTS } from '../../extension/src/server/protocol';

const context = {
  pyhelpers: '/ext/pyhelpers',
  separator: ':',
  baseEnv: { PYTHONPATH: '/user/lib', HOME: '/home/u' },
  sessionId: 'abc',
  hub: { address: '127.0.0.1:4567', token: 's3cret' },
};

/** The settings' defaults (tensorsight.breakOnNonFinite, tensorsight.justMyCode). */
const settings = { breakOnNonFinite: true, justMyCode: DEBUG_TRAINING_DEFAULTS.justMyCode };

const base: TensorSightLaunchConfig = {
  type: 'tensorsight',
  request: 'launch',
  name: 'Debug Training',
  program: '/w/train.py',
  cwd: '/w',
  options: { measure: true },
};

describe('toDebugpyLaunch', () => {
  test('fills debugpy fields and injects the agent', () => {
    const launch = toDebugpyLaunch(base, '/usr/bin/python3', settings, context);
    assert.equal(launch.program, '/w/train.py');
    assert.equal(launch.cwd, '/w');
    assert.equal(launch.python, '/usr/bin/python3');
    assert.equal(launch.justMyCode, true, 'Step Into steps over torch by default');
    assert.equal(launch.console, 'internalConsole');
    assert.deepEqual(launch.args, []);
    assert.equal(launch[SESSION_ID_KEY], 'abc');
    assert.equal(launch.options, undefined, 'options travel in TENSORSIGHT_OPTIONS only');
    assert.equal(launch.debugLauncherPath, '/ext/pyhelpers/tensorsight/debugpy_start/launcher');
    assert.deepEqual(launch.env, {
      PYTHONPATH: '/ext/pyhelpers:/user/lib',
      TENSORSIGHT_OPTIONS: JSON.stringify({ measure: true, breakOnNonFinite: true }),
      TENSORSIGHT_SESSION: 'abc',
      TENSORSIGHT_HUB: '127.0.0.1:4567',
      TENSORSIGHT_TOKEN: 's3cret',
    });
  });

  test('user choices win: python, justMyCode, console, breakOnNonFinite', () => {
    const launch = toDebugpyLaunch(
      {
        ...base,
        python: '/venv/bin/python',
        justMyCode: false,
        console: 'integratedTerminal',
        breakOnNonFinite: false,
      },
      '/usr/bin/python3',
      settings,
      context,
    );
    assert.equal(launch.python, '/venv/bin/python');
    assert.equal(launch.justMyCode, false);
    assert.equal(launch.console, 'integratedTerminal');
    assert.equal(JSON.parse(String(launch.env?.TENSORSIGHT_OPTIONS)).breakOnNonFinite, false);
  });

  test('without a hub the agent runs alone (no HUB/TOKEN variables)', () => {
    const launch = toDebugpyLaunch(
      base,
      'python3',
      { ...settings, breakOnNonFinite: false },
      { ...context, hub: undefined },
    );
    assert.equal(launch.env?.TENSORSIGHT_HUB, undefined);
    assert.equal(launch.env?.TENSORSIGHT_TOKEN, undefined);
    assert.equal(JSON.parse(String(launch.env?.TENSORSIGHT_OPTIONS)).breakOnNonFinite, false);
  });

  test('no cwd stays absent (debugpy then uses the program folder)', () => {
    const { cwd: _cwd, ...noCwd } = base;
    assert.equal('cwd' in toDebugpyLaunch(noCwd, 'python3', settings, context), false);
  });

  test('justMyCode: the configuration wins, else the tensorsight.justMyCode setting (on by default)', () => {
    assert.equal(DEBUG_TRAINING_DEFAULTS.justMyCode, true);
    const stepInto = { ...settings, justMyCode: false };
    assert.equal(toDebugpyLaunch(base, 'python3', stepInto, context).justMyCode, false, 'the setting steps into torch');
    assert.equal(toDebugpyLaunch({ ...base, justMyCode: true }, 'python3', stepInto, context).justMyCode, true);
    assert.equal(toDebugpyLaunch({ ...base, justMyCode: false }, 'python3', settings, context).justMyCode, false);
  });
});

describe('agentEnvironment', () => {
  test("keeps the user's PYTHONPATH after pyhelpers, without duplicates", () => {
    const env = agentEnvironment({ PYTHONPATH: '/a:/ext/pyhelpers:/b', FOO: 'x' }, {}, context);
    assert.equal(env.PYTHONPATH, '/ext/pyhelpers:/a:/b');
    assert.equal(env.FOO, 'x');
  });

  test("the editor's display language reaches the agent, unless the configuration sets it", () => {
    assert.equal(agentEnvironment({}, {}, { ...context, locale: 'es' })[AgentEnvironment.locale], 'es');
    const own = agentEnvironment({ [AgentEnvironment.locale]: 'en' }, {}, { ...context, locale: 'es' });
    assert.equal(own[AgentEnvironment.locale], 'en');
    assert.equal(AgentEnvironment.locale in agentEnvironment({}, {}, context), false);
  });

  test('a null PYTHONPATH in the config drops the inherited one', () => {
    const env = agentEnvironment({ PYTHONPATH: null }, {}, context);
    assert.equal(env.PYTHONPATH, '/ext/pyhelpers');
  });

  test('options: top-level breakOnNonFinite beats options, then the setting default', () => {
    assert.equal(launchOptions({ ...base, options: { breakOnNonFinite: false } }, true).breakOnNonFinite, false);
    assert.equal(
      launchOptions({ ...base, breakOnNonFinite: true, options: { breakOnNonFinite: false } }, false).breakOnNonFinite,
      true,
    );
    assert.equal(launchOptions({ ...base, options: undefined }, true).breakOnNonFinite, true);
  });
});

test('launchProblem and launchForFile', () => {
  assert.equal(launchProblem(base), undefined);
  assert.equal(launchProblem({ ...base, request: 'attach' }), 'request');
  assert.equal(launchProblem({ type: 'tensorsight', request: 'launch', name: 'x' }), 'program');
  assert.equal(launchProblem({ type: 'tensorsight', request: 'launch', name: 'x', module: 'pkg.train' }), undefined);
  assert.deepEqual(launchForFile('Debug Training', '/w/a.py', '/w'), {
    type: 'tensorsight',
    request: 'launch',
    name: 'Debug Training',
    program: '/w/a.py',
    args: [],
    cwd: '/w',
  });
});
