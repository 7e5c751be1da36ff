/**
 * Commands and debug providers through the one seam (common/vscodeapi replaced by support/fakeVscode): tensor
 * breakpoints, the live break-on-NaN toggle, and "Debug Training" refusing to run in an untrusted workspace.
 */
import './support/seam';
import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import { addTensorBreakpoint } from '../../extension/src/commands/tensorBreakpoint';
import { breakOnNonFiniteExpression, toggleBreakOnNonFinite } from '../../extension/src/commands/breakOnNonFinite';
import {
  PythonDebuggerInjection,
  TrainingAdapterFactory,
  TrainingConfigurationProvider,
} from '../../extension/src/debug/provider';
import { extensionPaths } from '../../extension/src/common/paths';
import type { LanguageServer } from '../../extension/src/server/languageServer';
import type { AgentSessions } from '../../extension/src/debug/sessions';
import type { InterpreterService } from '../../extension/src/common/interpreterService';
import { AgentSessions as AgentSessionsClass } from '../../extension/src/debug/sessions';
import {
  DebugAdapterServer,
  debugStarted,
  debugTerminated,
  fake,
  fakeDocument,
  Location,
  logChannel,
  PositionClass,
  SourceBreakpoint,
} from './support/fakeVscode';
import { PACKAGE_JSON } from './support/paths';

const SOURCE = ['import torch', 'loss = model(x).sum()', 'loss.backward()'].join('\n');

function fakeServer(answers: Record<string, unknown>): LanguageServer & { calls: Array<[string, unknown]> } {
  const calls: Array<[string, unknown]> = [];
  return {
    calls,
    request: (method: string, params: unknown) => {
      calls.push([method, params]);
      return Promise.resolve(answers[method]);
    },
  } as unknown as LanguageServer & { calls: Array<[string, unknown]> };
}

function editorAt(line: number, character: number) {
  fake.activeEditor = {
    document: fakeDocument('/w/train.py', SOURCE),
    selection: { active: new PositionClass(line, character) },
  };
}

beforeEach(() => fake.reset());

describe('Add Tensor Breakpoint', () => {
  test("offers the server's suggestions for the name under the cursor and sets a conditional breakpoint", async () => {
    editorAt(2, 2);
    const server = fakeServer({
      'tensorsight/suggestConditions': [
        { label: 'loss is NaN', condition: 'tensorsight.nan(loss)', description: 'NaN' },
        { label: 'loss spikes', condition: 'tensorsight.spike(loss, 3)', description: '3σ' },
      ],
      'tensorsight/validateCondition': {
        undefinedNames: [],
        message: '',
        syntaxError: null,
        sideEffects: [],
        available: true,
      },
    });
    fake.quickPick = (items) => Promise.resolve(items[1]);
    await addTensorBreakpoint(server);
    assert.deepEqual(server.calls[0], [
      'tensorsight/suggestConditions',
      { name: 'loss', uri: 'file:///w/train.py', line: 2 },
    ]);
    assert.deepEqual(server.calls[1], [
      'tensorsight/validateCondition',
      { uri: 'file:///w/train.py', line: 2, condition: 'tensorsight.spike(loss, 3)' },
    ]);
    assert.equal(fake.quickPickItems.length, 3, 'two suggestions and "Type a condition…"');
    assert.equal(fake.breakpoints.length, 1);
    const bp = fake.breakpoints[0];
    assert.equal(bp?.condition, 'tensorsight.spike(loss, 3)');
    assert.equal(bp?.location.range.start.line, 2);
    assert.equal(bp?.enabled, true);
  });

  test('falls back to built-in conditions without a server, and replaces a breakpoint on the same line', async () => {
    editorAt(1, 1);
    fake.breakpoints.push(
      new SourceBreakpoint(new Location(fake.activeEditor!.document.uri, new PositionClass(1, 0)), true),
    );
    await addTensorBreakpoint(fakeServer({}));
    assert.equal(fake.quickPickItems[0]?.condition, 'tensorsight.nan(loss)');
    assert.equal(fake.breakpoints.length, 1);
    assert.equal(fake.breakpoints[0]?.condition, 'tensorsight.nan(loss)');
  });

  test('warns once when the condition names something undefined at that line; "Add Anyway" is needed', async () => {
    editorAt(1, 1);
    const said = '`los` is not defined at line 2: debugpy would treat the condition as false and never stop.';
    const server = fakeServer({
      'tensorsight/validateCondition': {
        undefinedNames: ['los'],
        message: said,
        syntaxError: null,
        sideEffects: [],
        available: true,
      },
    });
    fake.quickPick = (items) => Promise.resolve(items.at(-1)); // "Type a condition…"
    fake.inputBox = () => Promise.resolve(' tensorsight.nan(los) ');
    await addTensorBreakpoint(server);
    assert.equal(fake.breakpoints.length, 0, 'not added without confirmation');
    assert.deepEqual(
      fake.messages.map((m) => m.text),
      [said],
      'one warning, saying it once',
    );
    fake.warningChoice = 'Add Anyway';
    await addTensorBreakpoint(server);
    assert.equal(fake.breakpoints[0]?.condition, 'tensorsight.nan(los)');
  });

  test('on a method the line calls, the conditions are about its receiver', async () => {
    editorAt(2, 8); // "backward" in `loss.backward()`
    const server = fakeServer({
      'tensorsight/suggestConditions': [{ label: 'NaN', condition: 'tensorsight.nan(loss)', description: '' }],
      'tensorsight/validateCondition': {
        undefinedNames: [],
        message: '',
        syntaxError: null,
        sideEffects: [],
        available: true,
      },
    });
    await addTensorBreakpoint(server);
    assert.equal((server.calls[0]?.[1] as { name: string }).name, 'loss');
    assert.equal(fake.breakpoints[0]?.condition, 'tensorsight.nan(loss)');
    fake.reset();
    editorAt(2, 8);
    await addTensorBreakpoint(fakeServer({})); // no server: the built-in list, on the receiver too
    assert.equal(fake.breakpoints[0]?.condition, 'tensorsight.nan(loss)');
    assert.ok(fake.quickPickItems.every((item) => !item.condition?.includes('backward')));
  });

  test('on a module or a function (the server offers nothing) only "Type a condition…" is left', async () => {
    editorAt(0, 9); // `torch` in `import torch`
    const server = fakeServer({ 'tensorsight/suggestConditions': [] });
    fake.quickPick = () => Promise.resolve(undefined);
    await addTensorBreakpoint(server);
    assert.equal(fake.quickPickItems.length, 1);
    assert.equal(fake.quickPickItems[0]?.condition, undefined);
    assert.equal(fake.breakpoints.length, 0);
  });

  test('needs a Python editor', async () => {
    await addTensorBreakpoint(fakeServer({}));
    assert.equal(fake.messages[0]?.level, 'info');
    assert.equal(fake.breakpoints.length, 0);
  });
});

describe('Toggle Break on NaN/Inf', () => {
  test('flips the setting and evaluates the switch in every live session', async () => {
    fake.settings.set('breakOnNonFinite', true);
    const requests: Array<[string, unknown]> = [];
    const session = {
      name: 'Debug Training',
      customRequest: (cmd: string, args: unknown) => (requests.push([cmd, args]), Promise.resolve({})),
    };
    const failing = { name: 'other', customRequest: () => Promise.reject(new Error('gone')) };
    const sessions = { sessions: () => [session, failing] } as unknown as AgentSessions;
    const enabled = await toggleBreakOnNonFinite(sessions, logChannel() as never);
    assert.equal(enabled, false);
    assert.deepEqual(fake.updates, [{ key: 'breakOnNonFinite', value: false, target: 1 }]);
    assert.deepEqual(requests, [
      ['evaluate', { expression: 'tensorsight.break_on_nonfinite(False)', context: 'repl' }],
    ]);
    assert.match(fake.messages.find((m) => m.level === 'warning')?.text ?? '', /other/);
    assert.equal(breakOnNonFiniteExpression(true), 'tensorsight.break_on_nonfinite(True)');
  });
});

describe('Debug Training providers', () => {
  const paths = extensionPaths('/ext');
  const interpreters = { require: () => Promise.resolve('/usr/bin/python3') } as unknown as InterpreterService;
  const sessions = {
    open: () => Promise.resolve({ sessionId: 'sid', hub: { address: '127.0.0.1:9', token: 't' } }),
  } as unknown as AgentSessions;
  const config = { type: 'tensorsight', request: 'launch', name: 'Debug Training', program: '/w/train.py' };

  test('nothing runs in an untrusted workspace', async () => {
    fake.trusted = false;
    const provider = new TrainingConfigurationProvider(paths, interpreters, sessions, logChannel() as never);
    assert.equal(await provider.resolveDebugConfigurationWithSubstitutedVariables(undefined, config), undefined);
    assert.equal(fake.messages[0]?.level, 'warning');
  });

  test('trusted: resolves to a debugpy launch with the agent and the hub', async () => {
    const provider = new TrainingConfigurationProvider(paths, interpreters, sessions, logChannel() as never);
    const resolved = await provider.resolveDebugConfigurationWithSubstitutedVariables(undefined, config);
    assert.equal(resolved?.python, '/usr/bin/python3');
    assert.equal(resolved?.tensorsightSessionId, 'sid');
    const env = resolved?.env as Record<string, string>;
    assert.match(env.PYTHONPATH ?? '', /^\/ext\/pyhelpers/);
    assert.equal(env.TENSORSIGHT_TOKEN, 't');
    assert.equal(JSON.parse(env.TENSORSIGHT_OPTIONS ?? '{}').breakOnNonFinite, true);
    // the first-NaN stop's link to View Tensor: the editor's scheme, this extension, this session
    assert.equal(
      JSON.parse(env.TENSORSIGHT_OPTIONS ?? '{}').viewTensorLink,
      'vscode://tensorsight.tensorsight/viewTensor?session=sid',
    );
  });

  test('F5 without launch.json debugs the active Python file; a non-Python editor gets a message', () => {
    const provider = new TrainingConfigurationProvider(paths, interpreters, sessions, logChannel() as never);
    assert.equal(provider.resolveDebugConfiguration(undefined, { type: '', request: '', name: '' }), undefined);
    editorAt(0, 0);
    const resolved = provider.resolveDebugConfiguration(undefined, { type: '', request: '', name: '' });
    assert.equal(resolved?.type, 'tensorsight');
    assert.equal(resolved?.program, '/w/train.py');
    assert.equal(provider.dynamicConfigurations(undefined)[0]?.name, 'Debug Training: train.py');
  });

  test('create a launch.json: one entry per name, plain ${file} / ${workspaceFolder}, resolved unchanged', async () => {
    // VS Code writes the manifest's initialConfigurations followed by what an initial provider returns.
    const provider = new TrainingConfigurationProvider(paths, interpreters, sessions, logChannel() as never);
    const debuggers = (PACKAGE_JSON.contributes as { debuggers: Array<Record<string, unknown>> }).debuggers;
    const manifest = (debuggers.find((d) => d.type === 'tensorsight')?.initialConfigurations ?? []) as Array<
      Record<string, unknown>
    >;
    const initialProvider = provider as { provideDebugConfigurations?: (folder: undefined) => unknown[] };
    const written = [...manifest, ...(initialProvider.provideDebugConfigurations?.(undefined) ?? [])] as Array<
      typeof config
    >;
    const names = written.map((c) => c.name);
    assert.deepEqual(names, [...new Set(names)], 'two launch.json entries with the same name');
    for (const entry of written) {
      assert.equal(entry.program, '${file}');
      assert.equal((entry as Record<string, unknown>).cwd, '${workspaceFolder}');
      assert.equal(provider.resolveDebugConfiguration(undefined, entry), entry, 'a valid entry is left as written');
    }
    // After VS Code substitutes the variables, F5 launches that file.
    const substituted = { ...written[0], name: 'Debug Training', program: '/w/train.py', cwd: '/w' };
    const resolved = await provider.resolveDebugConfigurationWithSubstitutedVariables(undefined, substituted);
    assert.equal(resolved?.program, '/w/train.py');
    assert.equal(resolved?.cwd, '/w');
    assert.deepEqual(fake.messages, []);
  });

  test('a launch.json entry with ^"…" snippet text is read as the string it stands for, with a warning', () => {
    const log = logChannel();
    const provider = new TrainingConfigurationProvider(paths, interpreters, sessions, log as never);
    const broken = { ...config, program: '^"\\${file}"', cwd: '^"\\${workspaceFolder}"', args: [] };
    const resolved = provider.resolveDebugConfiguration(undefined, broken);
    assert.equal(resolved?.program, '${file}');
    assert.equal(resolved?.cwd, '${workspaceFolder}');
    assert.deepEqual(resolved?.args, []);
    assert.equal(fake.messages.length, 1);
    assert.equal(fake.messages[0]?.level, 'warning');
    assert.match(fake.messages[0]?.text ?? '', /"program": "\$\{file\}"/);
    assert.ok(log.lines.some((l) => l.startsWith('warn') && l.includes('snippet syntax')));
  });

  test('snippet text that stands for no string is refused with a clear message', () => {
    const provider = new TrainingConfigurationProvider(paths, interpreters, sessions, logChannel() as never);
    assert.equal(provider.resolveDebugConfiguration(undefined, { ...config, program: '^"${file}' }), undefined);
    assert.equal(fake.messages[0]?.level, 'error');
    assert.match(fake.messages[0]?.text ?? '', /"program" in launch\.json/);
  });

  test("the adapter is debugpy's, from the bundled libs, through our start module, isolated from the workspace", async () => {
    const factory = new TrainingAdapterFactory(paths, interpreters, logChannel() as never);
    const descriptor = (await factory.createDebugAdapterDescriptor({
      configuration: { python: '/venv/bin/python' },
    } as never)) as unknown as {
      command: string;
      args: string[];
      options: { env: Record<string, string>; cwd: string };
    };
    assert.equal(descriptor.command, '/venv/bin/python');
    assert.deepEqual(descriptor.args, [
      '-I',
      '/ext/pyhelpers/tensorsight/launch.py',
      '--path',
      '/ext/extension/bundled/libs',
      '--path',
      '/ext/pyhelpers',
      '--chdir',
      process.cwd(),
      '-m',
      'tensorsight.debugpy_start.adapter',
    ]);
    assert.equal(descriptor.options.cwd, '/ext/pyhelpers');
    assert.match(descriptor.options.env.PYTHONPATH ?? '', /^\/ext\/extension\/bundled\/libs/);
  });
});

describe("injection into the Python extension's debugpy sessions", () => {
  const paths = extensionPaths('/ext');
  const sessions = {
    open: () => Promise.resolve({ sessionId: 'sid', hub: { address: '127.0.0.1:9', token: 't' } }),
  } as unknown as AgentSessions;
  const launch = { type: 'debugpy', request: 'launch', name: 'Python: File', program: '/w/a.py', env: { A: '1' } };

  test('a launch gets the agent environment; the user env is kept', async () => {
    const injection = new PythonDebuggerInjection(paths, sessions, logChannel() as never);
    const resolved = await injection.resolveDebugConfigurationWithSubstitutedVariables(undefined, launch);
    const env = resolved?.env as Record<string, string>;
    assert.equal(env.A, '1');
    assert.match(env.PYTHONPATH ?? '', /^\/ext\/pyhelpers/);
    assert.equal(env.TENSORSIGHT_HUB, '127.0.0.1:9');
    assert.equal(resolved?.tensorsightSessionId, 'sid');
    assert.equal(resolved?.type, 'debugpy');
  });

  test('attach, the setting off, or an untrusted workspace leave the configuration untouched', async () => {
    const injection = new PythonDebuggerInjection(paths, sessions, logChannel() as never);
    const attach = { ...launch, request: 'attach' };
    assert.deepEqual(await injection.resolveDebugConfigurationWithSubstitutedVariables(undefined, attach), attach);
    fake.settings.set('injectIntoPythonDebugger', false);
    assert.deepEqual(await injection.resolveDebugConfigurationWithSubstitutedVariables(undefined, launch), launch);
    fake.settings.clear();
    fake.trusted = false;
    assert.deepEqual(await injection.resolveDebugConfigurationWithSubstitutedVariables(undefined, launch), launch);
  });
});

describe('subprocess sessions and torchrun', () => {
  const paths = extensionPaths('/ext');
  const interpreters = { require: () => Promise.resolve('/usr/bin/python3') } as unknown as InterpreterService;
  const sessions = { open: () => Promise.resolve({ sessionId: 'sid' }) } as unknown as AgentSessions;
  const child = {
    type: 'tensorsight',
    request: 'attach',
    name: 'Subprocess 4242',
    subProcessId: 4242,
    connect: { host: '127.0.0.1', port: 5678 },
    tensorsightSessionId: 'sid',
  };

  test('a subprocess session debugpy announces attaches to the running adapter, untouched', async () => {
    const provider = new TrainingConfigurationProvider(paths, interpreters, sessions, logChannel() as never);
    assert.equal(provider.resolveDebugConfiguration(undefined, child), child);
    assert.equal(await provider.resolveDebugConfigurationWithSubstitutedVariables(undefined, child), child);
    assert.equal(fake.messages.length, 0, 'no "launch only" error for a worker');
    const factory = new TrainingAdapterFactory(paths, interpreters, logChannel() as never);
    const descriptor = await factory.createDebugAdapterDescriptor({ configuration: child } as never);
    assert.ok(descriptor instanceof DebugAdapterServer);
    assert.deepEqual([descriptor.port, descriptor.host], [5678, '127.0.0.1']);
  });

  test('an attach to another host needs trust and an explicit confirmation; the adapter refuses it otherwise', async () => {
    const provider = new TrainingConfigurationProvider(paths, interpreters, sessions, logChannel() as never);
    const factory = new TrainingAdapterFactory(paths, interpreters, logChannel() as never);
    const remote = { ...child, connect: { host: '203.0.113.7', port: 5679 } };
    fake.trusted = false;
    assert.equal(await provider.resolveDebugConfigurationWithSubstitutedVariables(undefined, child), undefined);
    assert.equal(await provider.resolveDebugConfigurationWithSubstitutedVariables(undefined, remote), undefined);
    assert.match(fake.messages.at(-1)?.text ?? '', /untrusted/);
    fake.trusted = true;
    fake.warningChoice = undefined; // the modal dismissed
    assert.equal(await provider.resolveDebugConfigurationWithSubstitutedVariables(undefined, remote), undefined);
    assert.match(fake.messages.at(-1)?.text ?? '', /203\.0\.113\.7:5679/);
    assert.equal(await factory.createDebugAdapterDescriptor({ configuration: remote } as never), undefined);
    fake.warningChoice = 'Connect';
    assert.equal(await provider.resolveDebugConfigurationWithSubstitutedVariables(undefined, remote), remote);
    const descriptor = await factory.createDebugAdapterDescriptor({ configuration: remote } as never);
    assert.ok(descriptor instanceof DebugAdapterServer);
    assert.deepEqual([descriptor.port, descriptor.host], [5679, '203.0.113.7']);
  });

  describe('a launch.json attach entry', () => {
    const hubSessions = {
      open: () => Promise.resolve({ sessionId: 'sid', hub: { address: '127.0.0.1:9', token: 'hub-token' } }),
    } as unknown as AgentSessions;
    const entry = {
      type: 'tensorsight',
      request: 'attach',
      name: 'Attach',
      connect: { host: '127.0.0.1', port: 5678 },
    };

    test("attaches through debugpy's adapter with the agent's settings; the log never shows the token", async () => {
      const log = logChannel();
      const provider = new TrainingConfigurationProvider(paths, interpreters, hubSessions, log as never);
      const resolved = await provider.resolveDebugConfigurationWithSubstitutedVariables(undefined, entry);
      assert.equal(resolved?.request, 'attach');
      assert.deepEqual(resolved?.connect, { host: '127.0.0.1', port: 5678 });
      assert.equal(resolved?.tensorsightSessionId, 'sid');
      const agent = resolved?.tensorsightAgent as Record<string, string>;
      assert.equal(agent.TENSORSIGHT_HUB, '127.0.0.1:9');
      assert.equal(agent.TENSORSIGHT_TOKEN, 'hub-token');
      assert.equal(JSON.parse(agent.TENSORSIGHT_OPTIONS ?? '{}').breakOnNonFinite, true);
      assert.equal(resolved?.env, undefined);
      assert.equal(resolved?.python, undefined);
      assert.deepEqual(fake.messages, []);
      assert.ok(log.lines.some((l) => l.includes('attach, connect 127.0.0.1:5678 (session sid)')));
      assert.ok(!log.lines.some((l) => l.includes('hub-token')));
      // Not a debugpy child session: the adapter is started as for a launch, and connects to the process itself.
      const factory = new TrainingAdapterFactory(paths, interpreters, logChannel() as never);
      const descriptor = (await factory.createDebugAdapterDescriptor({ configuration: resolved } as never)) as {
        command?: string;
        args?: string[];
      };
      assert.equal(descriptor.command, '/usr/bin/python3');
      assert.ok(descriptor.args?.includes('tensorsight.debugpy_start.adapter'));
    });

    test('an unusable entry is refused with a message that names what to fix', async () => {
      const provider = new TrainingConfigurationProvider(paths, interpreters, hubSessions, logChannel() as never);
      const cases: Array<[Record<string, unknown>, RegExp]> = [
        [{ ...entry, connect: undefined }, /"connect": \{"host": "127\.0\.0\.1", "port": 5678\}/],
        [{ ...entry, connect: { port: 70000 } }, /"port" must be a whole number from 1 to 65535/],
        [{ ...entry, pathMappings: [{ localRoot: '/w' }] }, /"pathMappings" must be a list/],
        [{ ...entry, listen: { port: 5679 } }, /"connect" or "listen", not both/],
      ];
      for (const [config, message] of cases) {
        fake.messages.length = 0;
        assert.equal(
          await provider.resolveDebugConfigurationWithSubstitutedVariables(undefined, config as never),
          undefined,
        );
        assert.equal(fake.messages[0]?.level, 'error');
        assert.match(fake.messages[0]?.text ?? '', message);
      }
      fake.messages.length = 0;
      const other = await provider.resolveDebugConfigurationWithSubstitutedVariables(undefined, {
        ...entry,
        request: 'foo',
      });
      assert.equal(other, undefined);
      assert.match(fake.messages[0]?.text ?? '', /"launch" or "attach"/);
    });

    test('another host, or listening beyond loopback, needs trust and a confirmation', async () => {
      const provider = new TrainingConfigurationProvider(paths, interpreters, hubSessions, logChannel() as never);
      const remote = { ...entry, connect: { host: '198.51.100.4', port: 5678 } };
      fake.trusted = false;
      assert.equal(await provider.resolveDebugConfigurationWithSubstitutedVariables(undefined, entry), undefined);
      assert.match(fake.messages.at(-1)?.text ?? '', /untrusted/);
      fake.trusted = true;
      fake.warningChoice = undefined;
      assert.equal(await provider.resolveDebugConfigurationWithSubstitutedVariables(undefined, remote), undefined);
      assert.match(fake.messages.at(-1)?.text ?? '', /198\.51\.100\.4:5678/);
      fake.warningChoice = 'Connect';
      const resolved = await provider.resolveDebugConfigurationWithSubstitutedVariables(undefined, remote);
      assert.deepEqual(resolved?.connect, { host: '198.51.100.4', port: 5678 });
      const agent = resolved?.tensorsightAgent as Record<string, string>;
      assert.equal(agent.TENSORSIGHT_TOKEN, undefined, 'the loopback hub is out of reach there: no token');
      const listen = {
        type: 'tensorsight',
        request: 'attach',
        name: 'Listen',
        listen: { host: '0.0.0.0', port: 5679 },
      };
      fake.warningChoice = 'Connect'; // the wrong button: listening asks for "Listen"
      assert.equal(await provider.resolveDebugConfigurationWithSubstitutedVariables(undefined, listen), undefined);
      assert.match(fake.messages.at(-1)?.text ?? '', /0\.0\.0\.0:5679/);
      fake.warningChoice = 'Listen';
      const listening = await provider.resolveDebugConfigurationWithSubstitutedVariables(undefined, listen);
      assert.deepEqual(listening?.listen, { host: '0.0.0.0', port: 5679 });
    });
  });

  test('a torchrun block launches torch.distributed.run; a bad one is refused with the reason', async () => {
    const provider = new TrainingConfigurationProvider(paths, interpreters, sessions, logChannel() as never);
    const config = {
      type: 'tensorsight',
      request: 'launch',
      name: 'DDP',
      program: '/w/ddp.py',
      torchrun: { nprocPerNode: 2 },
      ranks: [1],
    };
    const resolved = await provider.resolveDebugConfigurationWithSubstitutedVariables(undefined, config);
    assert.equal(resolved?.module, 'torch.distributed.run');
    assert.equal(resolved?.program, undefined);
    assert.ok((resolved?.args as string[]).includes('/w/ddp.py'));
    assert.deepEqual(JSON.parse((resolved?.env as Record<string, string>).TENSORSIGHT_OPTIONS ?? '{}').ranks, [1]);
    const bad = await provider.resolveDebugConfigurationWithSubstitutedVariables(undefined, {
      ...config,
      torchrun: { nprocPerNode: -1 },
    });
    assert.equal(bad, undefined);
    assert.match(fake.messages.at(-1)?.text ?? '', /nprocPerNode/);
  });

  test('the hub session ends with the last debug session of a run, not with a worker', () => {
    const requests: Array<[string, unknown]> = [];
    const server = {
      readyForLaunch: () => Promise.resolve('ready'),
      state: 'ready',
      request: (method: string, params: unknown) => {
        requests.push([method, params]);
        return Promise.resolve(undefined);
      },
    } as unknown as LanguageServer;
    const tracker = new AgentSessionsClass(server, logChannel() as never);
    const parent = { id: 'p', name: 'Debug Training', configuration: { tensorsightSessionId: 'run1' } };
    const worker = { id: 'w', name: 'Subprocess 1', configuration: { tensorsightSessionId: 'run1' } };
    const other = { id: 'x', name: 'plain', configuration: {} };
    debugStarted.fire(parent);
    debugStarted.fire(worker);
    debugStarted.fire(other);
    assert.equal(tracker.count, 1);
    assert.equal(tracker.sessions().length, 2);
    debugTerminated.fire(worker);
    assert.deepEqual(requests, []);
    debugTerminated.fire(parent);
    assert.deepEqual(requests, [['tensorsight/endSession', { sessionId: 'run1' }]]);
    assert.equal(tracker.count, 0);
    tracker.dispose();
  });
});
