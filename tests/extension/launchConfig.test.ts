/** "Debug Training" → debugpy launch or attach request, and the agent's injection environment or attach settings. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  agentEnvironment,
  agentVariables,
  attachEndpoint,
  attachProblem,
  launchForFile,
  launchOptions,
  launchProblem,
  SESSION_ID_KEY,
  type TensorSightLaunchConfig,
  toDebugpyAttach,
  toDebugpyLaunch,
} from '../../extension/src/debug/launchConfig';
import { AgentEnvironment, ATTACH_AGENT_KEY, DEBUG_TRAINING_DEFAULTS } from '../../extension/src/server/protocol';

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
  assert.equal(launchProblem({ ...base, request: 'foo' }), 'request');
  assert.equal(launchProblem({ ...base, request: 'attach' }), 'endpoint', 'an attach is checked as an attach');
  assert.equal(launchProblem({ ...base, request: 'attach', connect: { port: 5678 } }), undefined);
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

describe('toDebugpyAttach', () => {
  const attach: TensorSightLaunchConfig = {
    type: 'tensorsight',
    request: 'attach',
    name: 'Attach',
    connect: { host: '127.0.0.1', port: 5678 },
    options: { measure: true },
  };
  const session = {
    sessionId: 'abc',
    hub: { address: '127.0.0.1:4567', token: 's3cret' },
    locale: 'es',
    viewLink: 'vscode://tensorsight.tensorsight/viewTensor?session=abc',
  };

  test("connects to a waiting process and carries the agent's settings, hub and token included", () => {
    const request = toDebugpyAttach(attach, settings, session);
    assert.equal(request.type, 'tensorsight');
    assert.equal(request.request, 'attach');
    assert.deepEqual(request.connect, { host: '127.0.0.1', port: 5678 });
    assert.equal(request.justMyCode, true, 'the setting, as for a launch');
    assert.equal(request.breakOnNonFinite, true);
    assert.equal(request[SESSION_ID_KEY], 'abc');
    assert.deepEqual(request[ATTACH_AGENT_KEY], {
      TENSORSIGHT_OPTIONS: JSON.stringify({ measure: true, breakOnNonFinite: true, viewTensorLink: session.viewLink }),
      TENSORSIGHT_SESSION: 'abc',
      TENSORSIGHT_LOCALE: 'es',
      TENSORSIGHT_HUB: '127.0.0.1:4567',
      TENSORSIGHT_TOKEN: 's3cret',
    });
    const agent = request[ATTACH_AGENT_KEY] as Record<string, unknown>;
    assert.ok(
      Object.values(agent).every((value) => typeof value === 'string'),
      'the agent reads an object of strings',
    );
    for (const key of ['options', 'env', 'python', 'program', 'module', 'args', 'debugLauncherPath', 'listen']) {
      assert.equal(key in request, false, `${key} is not part of an attach request`);
    }
  });

  test('without a hub the agent gets no address and no token', () => {
    const agent = toDebugpyAttach(attach, settings, { sessionId: 'abc' })[ATTACH_AGENT_KEY] as Record<string, string>;
    assert.deepEqual(Object.keys(agent).sort(), [AgentEnvironment.options, AgentEnvironment.session].sort());
  });

  test('a process behind another host cannot reach the loopback hub: it gets no token', () => {
    const remote = { ...attach, connect: { host: 'gpu-host', port: 5678 } };
    const agent = toDebugpyAttach(remote, settings, session)[ATTACH_AGENT_KEY] as Record<string, string>;
    assert.equal(agent[AgentEnvironment.token], undefined);
    assert.equal(agent[AgentEnvironment.hub], undefined);
    assert.equal(agent[AgentEnvironment.session], 'abc');
    const local = { ...attach, connect: { host: 'localhost', port: 5678 } };
    const own = toDebugpyAttach(local, settings, session)[ATTACH_AGENT_KEY] as Record<string, string>;
    assert.equal(own[AgentEnvironment.token], 's3cret');
  });

  test('listen waits for the process to connect back; the host defaults to loopback', () => {
    const request = toDebugpyAttach(
      { type: 'tensorsight', request: 'attach', name: 'Listen', listen: { port: 5679 } },
      settings,
      session,
    );
    assert.deepEqual(request.listen, { host: '127.0.0.1', port: 5679 });
    assert.equal('connect' in request, false);
    assert.equal((request[ATTACH_AGENT_KEY] as Record<string, string>)[AgentEnvironment.token], 's3cret');
  });

  test('legacy top-level host/port become connect', () => {
    const legacy = { type: 'tensorsight', request: 'attach', name: 'Legacy', host: 'localhost', port: 5678 };
    const request = toDebugpyAttach(legacy, settings, session);
    assert.deepEqual(request.connect, { host: 'localhost', port: 5678 });
    assert.equal('host' in request, false);
    assert.equal('port' in request, false);
    assert.deepEqual(attachEndpoint({ ...legacy, host: undefined }), {
      mode: 'connect',
      host: '127.0.0.1',
      port: 5678,
    });
    assert.deepEqual(attachEndpoint({ ...legacy, port: '5680' }), { mode: 'connect', host: 'localhost', port: 5680 });
  });

  test('pathMappings pass through; justMyCode, breakOnNonFinite and options as for a launch', () => {
    const pathMappings = [{ localRoot: '/w', remoteRoot: '/home/me/project' }];
    const request = toDebugpyAttach(
      { ...attach, pathMappings, justMyCode: false, breakOnNonFinite: false, options: { breakOnNonFinite: true } },
      settings,
      session,
    );
    assert.deepEqual(request.pathMappings, pathMappings);
    assert.equal(request.justMyCode, false);
    assert.equal(request.breakOnNonFinite, false);
    const agent = request[ATTACH_AGENT_KEY] as Record<string, string>;
    assert.equal(JSON.parse(agent[AgentEnvironment.options] ?? '{}').breakOnNonFinite, false, 'the top level wins');
    const fromSetting = toDebugpyAttach(
      { ...attach, options: undefined },
      { ...settings, breakOnNonFinite: false },
      session,
    );
    const options = JSON.parse(
      (fromSetting[ATTACH_AGENT_KEY] as Record<string, string>)[AgentEnvironment.options] ?? '',
    );
    assert.equal(options.breakOnNonFinite, false, 'the setting when the entry says nothing');
    const own = { ...attach, options: { viewTensorLink: 'mine' } };
    const ownOptions = (toDebugpyAttach(own, settings, session)[ATTACH_AGENT_KEY] as Record<string, string>)[
      AgentEnvironment.options
    ];
    assert.equal(JSON.parse(ownOptions ?? '{}').viewTensorLink, 'mine');
  });

  test('attachProblem names what to fix', () => {
    const entry = { type: 'tensorsight', request: 'attach', name: 'x' };
    assert.equal(attachProblem(attach), undefined);
    assert.equal(attachProblem(entry), 'endpoint');
    assert.equal(attachProblem({ ...entry, connect: 'localhost:5678' }), 'endpoint');
    assert.equal(attachProblem({ ...entry, connect: { port: 1 }, listen: { port: 2 } }), 'both');
    assert.equal(attachProblem({ ...entry, connect: {} }), 'port');
    assert.equal(attachProblem({ ...entry, connect: { host: 'h', port: 0 } }), 'port');
    assert.equal(attachProblem({ ...entry, connect: { port: 65536 } }), 'port');
    assert.equal(attachProblem({ ...entry, connect: { port: 56.5 } }), 'port');
    assert.equal(attachProblem({ ...entry, listen: { port: 'http' } }), 'port');
    assert.equal(attachProblem({ ...entry, host: 'localhost' }), 'port');
    assert.equal(attachProblem({ ...entry, connect: { host: '', port: 5678 } }), 'host');
    assert.equal(attachProblem({ ...entry, connect: { host: 7, port: 5678 } }), 'host');
    assert.equal(attachProblem({ ...entry, port: 5678 }), undefined);
    assert.equal(attachProblem({ ...attach, pathMappings: { localRoot: '/w', remoteRoot: '/r' } }), 'pathMappings');
    assert.equal(attachProblem({ ...attach, pathMappings: [{ localRoot: '/w' }] }), 'pathMappings');
    assert.equal(attachProblem({ ...attach, pathMappings: [] }), undefined);
    assert.equal(attachEndpoint({ ...entry, connect: {} }), undefined);
    assert.throws(() => toDebugpyAttach(entry, settings, session), /endpoint/);
  });
});

test('agentVariables is what a launch puts in the environment and an attach in its request', () => {
  const variables = agentVariables({ measure: true }, context);
  const env = agentEnvironment({}, { measure: true }, context);
  for (const [name, value] of Object.entries(variables)) assert.equal(env[name], value, name);
  assert.equal('PYTHONPATH' in variables, false);
});
