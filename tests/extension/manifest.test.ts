/**
 * The manifest and translations agree with the code: every contributed command is registered, every %key% has an
 * English and a Spanish string, every runtime message has a Spanish translation, versions are pinned consistently.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import {
  expandSnippetValue,
  launchProblem,
  repairSnippetSyntax,
  type TensorSightLaunchConfig,
} from '../../extension/src/debug/launchConfig';
import { torchrunProblem } from '../../extension/src/debug/torchrun';
import { DEBUG_TRAINING_DEFAULTS } from '../../extension/src/server/protocol';
import { PACKAGE_JSON, REPO } from './support/paths';

function readJson(relative: string): Record<string, unknown> {
  return JSON.parse(fs.readFileSync(path.join(REPO, relative), 'utf8')) as Record<string, unknown>;
}

function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    return entry.isDirectory() ? sources(full) : full.endsWith('.ts') ? [full] : [];
  });
}

/** Every string literal passed to l10n.t(...) or t(...) in extension/src. */
function runtimeMessages(): Set<string> {
  const found = new Set<string>();
  const call = /(?:\bl10n\.t|(?<![.\w$])t)\(\s*('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")/g;
  for (const file of sources(path.join(REPO, 'extension', 'src'))) {
    const text = fs.readFileSync(file, 'utf8');
    for (const match of text.matchAll(call)) {
      const literal = match[1] ?? '';
      found.add(
        JSON.parse(
          '"' +
            literal
              .slice(1, -1)
              .replace(/\\'/g, "'")
              .replace(/(?<!\\)"/g, '\\"') +
            '"',
        ) as string,
      );
    }
  }
  return found;
}

test('every contributed command is registered in extension.ts, and vice versa', () => {
  const contributes = PACKAGE_JSON.contributes as { commands: Array<{ command: string }> };
  const declared = contributes.commands.map((c) => c.command).sort();
  const source = fs.readFileSync(path.join(REPO, 'extension', 'src', 'extension.ts'), 'utf8');
  const registered = [...source.matchAll(/registerCommand\('([\w.]+)'/g)].map((m) => m[1]).sort();
  assert.deepEqual(registered, declared);
});

test('manifest strings exist in English and Spanish', () => {
  const manifest = fs.readFileSync(path.join(REPO, 'package.json'), 'utf8');
  const keys = new Set([...manifest.matchAll(/"%([\w.]+)%"/g)].map((m) => m[1]));
  const en = readJson('package.nls.json');
  const es = readJson('package.nls.es.json');
  for (const key of keys) {
    assert.ok(key && typeof en[key] === 'string', `package.nls.json lacks ${key ?? ''}`);
    assert.ok(key && typeof es[key] === 'string', `package.nls.es.json lacks ${key ?? ''}`);
  }
  assert.deepEqual(Object.keys(es).sort(), Object.keys(en).sort());
  const untranslated = Object.keys(en).filter((k) => en[k] === es[k] && k !== 'extension.displayName');
  assert.deepEqual(untranslated, [], 'Spanish strings that are still English');
});

test('every runtime message has a Spanish translation', () => {
  const messages = runtimeMessages();
  assert.ok(messages.size > 50, `found only ${messages.size} messages: the scan is broken`);
  const es = readJson('extension/l10n/bundle.l10n.es.json');
  const missing = [...messages].filter((m) => typeof es[m] !== 'string');
  assert.deepEqual(missing, []);
  const stale = Object.keys(es).filter((m) => !messages.has(m));
  assert.deepEqual(stale, [], 'translations of messages the code no longer uses');
  for (const [english, spanish] of Object.entries(es)) {
    const placeholders = (s: string) => (s.match(/\{\d\}/g) ?? []).sort().join();
    assert.equal(placeholders(String(spanish)), placeholders(english), `placeholders differ for "${english}"`);
  }
  assert.equal(PACKAGE_JSON.l10n, './extension/l10n');
});

test('workspace trust, activation and the debug type are declared', () => {
  const capabilities = PACKAGE_JSON.capabilities as {
    untrustedWorkspaces: { supported: string; restrictedConfigurations: string[] };
  };
  assert.equal(capabilities.untrustedWorkspaces.supported, 'limited');
  assert.ok(capabilities.untrustedWorkspaces.restrictedConfigurations.includes('tensorsight.python'));
  const events = PACKAGE_JSON.activationEvents as string[];
  for (const event of ['onLanguage:python', 'onDebugResolve:tensorsight', 'onDebugDynamicConfigurations:tensorsight']) {
    assert.ok(events.includes(event), event);
  }
  const debuggers = (
    PACKAGE_JSON.contributes as { debuggers: Array<{ type: string; configurationSnippets: unknown[] }> }
  ).debuggers;
  assert.equal(debuggers[0]?.type, 'tensorsight');
  assert.ok((debuggers[0]?.configurationSnippets.length ?? 0) > 0);
});

test('"Debug Training" steps over library code by default, in the setting and the debug type alike', () => {
  const contributes = PACKAGE_JSON.contributes as {
    configuration: { properties: Record<string, { default: unknown }> };
    debuggers: Array<{ configurationAttributes: { launch: { properties: Record<string, { default: unknown }> } } }>;
  };
  assert.equal(
    contributes.configuration.properties['tensorsight.justMyCode']?.default,
    DEBUG_TRAINING_DEFAULTS.justMyCode,
  );
  const launch = contributes.debuggers[0]?.configurationAttributes.launch.properties;
  assert.equal(launch?.justMyCode?.default, DEBUG_TRAINING_DEFAULTS.justMyCode);
  assert.equal(launch?.console?.default, DEBUG_TRAINING_DEFAULTS.console);
});

test('@types/vscode does not exceed engines.vscode (else the API used may be missing at run time)', () => {
  const engine = (PACKAGE_JSON.engines as { vscode: string }).vscode.replace(/^\^/, '');
  const types = (PACKAGE_JSON.devDependencies as Record<string, string>)['@types/vscode'] ?? '';
  const minor = (v: string) => Number(v.split('.')[1]);
  assert.ok(minor(types) <= minor(engine), `@types/vscode ${types} > engines.vscode ${engine}`);
  assert.ok(minor(engine) <= 139, 'code-server 4.139.1 is VS Code 1.139');
});

test('no source module imports vscode except the seam', () => {
  const offenders = sources(path.join(REPO, 'extension', 'src')).filter(
    (file) =>
      !file.endsWith(path.join('common', 'vscodeapi.ts')) && /from 'vscode'/.test(fs.readFileSync(file, 'utf8')),
  );
  assert.deepEqual(offenders, []);
});

/** A manifest value with every string passed through `expand` (objects and arrays walked). */
function mapStrings(value: unknown, expand: (s: string) => unknown): unknown {
  if (typeof value === 'string') return expand(value);
  if (Array.isArray(value)) return value.map((v) => mapStrings(v, expand));
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, mapStrings(v, expand)]));
  }
  return value;
}

function allStrings(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(allStrings);
  if (typeof value === 'object' && value !== null) return Object.values(value).flatMap(allStrings);
  return [];
}

test('launch.json: initial configurations are literal and valid; each snippet inserts a valid configuration', () => {
  const debuggers = (PACKAGE_JSON.contributes as { debuggers: Array<Record<string, unknown>> }).debuggers;
  const ours = debuggers.find((d) => d.type === 'tensorsight');
  assert.ok(ours, 'the tensorsight debugger is contributed');
  const en = readJson('package.nls.json');
  const localized = (s: string) => s.replace(/^%([\w.]+)%$/, (_, key: string) => String(en[key]));

  // initialConfigurations are written into launch.json as they are: no snippet syntax may appear in them.
  const initial = mapStrings(ours.initialConfigurations, localized) as TensorSightLaunchConfig[];
  assert.ok(initial.length >= 1);
  for (const text of allStrings(initial)) {
    assert.doesNotMatch(text, /^\^|\\\$/, `snippet syntax in initialConfigurations: ${text}`);
  }
  for (const config of initial) {
    assert.equal(launchProblem(config), undefined);
    assert.equal(config.program, '${file}');
    assert.equal(config.cwd, '${workspaceFolder}');
  }
  const names = initial.map((c) => c.name);
  assert.deepEqual(names, [...new Set(names)], 'initial configurations with the same name');

  // A snippet body, once VS Code inserts it (`^"…"` raw JSON text, `\$` an escaped dollar), is a configuration.
  const snippets = ours.configurationSnippets as Array<{ label: string; body: unknown }>;
  assert.ok(snippets.length >= 1);
  const inserted = snippets.map((snippet) => ({
    label: snippet.label,
    config: mapStrings(mapStrings(snippet.body, localized), expandSnippetValue) as TensorSightLaunchConfig,
  }));
  for (const { label, config } of inserted) {
    assert.ok(!allStrings(config).some((s) => s.startsWith('^') || s.includes('\\$')), label);
    assert.equal(launchProblem(config), undefined, label);
    assert.equal(config.type, 'tensorsight', label);
    if (config.request === 'launch') {
      assert.ok(config.program === '${file}' || config.module, label);
      assert.equal(config.cwd, '${workspaceFolder}', label);
      assert.equal(torchrunProblem(config), undefined, label);
    } else {
      assert.equal(config.request, 'attach', label);
      assert.deepEqual(config.connect, { host: '127.0.0.1', port: 5678 }, label);
      for (const mapping of (config.pathMappings ?? []) as Array<Record<string, string>>) {
        assert.equal(mapping.localRoot, '${workspaceFolder}', label);
      }
    }
    assert.deepEqual(repairSnippetSyntax(config).repaired, [], 'an inserted snippet needs no repair');
  }
  const nameOf = (c: TensorSightLaunchConfig) => c.name;
  const kinds = inserted.map(({ config }) => config);
  assert.ok(
    kinds.some((c) => c.module),
    'a module snippet',
  );
  assert.ok(
    kinds.some((c) => c.torchrun),
    'a torchrun snippet',
  );
  assert.ok(
    kinds.some((c) => c.request === 'attach' && !c.pathMappings),
    'an attach snippet',
  );
  assert.ok(
    kinds.some((c) => c.request === 'attach' && Array.isArray(c.pathMappings)),
    'a remote attach snippet',
  );
  assert.deepEqual(kinds.map(nameOf), [...new Set(kinds.map(nameOf))], 'two snippets insert the same name');
  // The raw snippet text really uses the snippet syntax (so the check above is not vacuous).
  assert.ok(allStrings(snippets.map((s) => s.body)).some((s) => s.startsWith('^"')));
});

interface Schema {
  type?: string | string[];
  properties?: Record<string, Schema>;
  items?: Schema;
  required?: string[];
  additionalProperties?: boolean;
}

/** The keys of `value` its schema does not declare, as paths (VS Code flags them in launch.json: "not allowed"). */
function undeclared(value: unknown, schema: Schema, at: string): string[] {
  if (Array.isArray(value))
    return schema.items ? value.flatMap((v, i) => undeclared(v, schema.items!, `${at}[${i}]`)) : [];
  if (typeof value !== 'object' || value === null || !schema.properties) return [];
  return Object.entries(value).flatMap(([key, v]) => {
    const inner = schema.properties?.[key];
    return inner ? undeclared(v, inner, `${at}.${key}`) : [`${at}.${key}`];
  });
}

test('launch.json schema: launch takes program or module, attach takes connect/listen; snippets use declared keys', () => {
  const debuggers = (PACKAGE_JSON.contributes as { debuggers: Array<Record<string, unknown>> }).debuggers;
  const ours = debuggers.find((d) => d.type === 'tensorsight') as {
    configurationAttributes: Record<string, Schema>;
    configurationSnippets: Array<{ label: string; body: Record<string, unknown> }>;
    initialConfigurations: Array<Record<string, unknown>>;
  };
  const { launch, attach } = ours.configurationAttributes;
  assert.ok(launch && attach, 'launch and attach are both declared');
  assert.deepEqual(launch.required ?? [], [], 'a module entry needs no program');
  for (const key of ['program', 'module', 'torchrun', 'ranks', 'justMyCode', 'breakOnNonFinite', 'options']) {
    assert.ok(launch.properties?.[key], `launch.${key}`);
  }
  for (const key of [
    'connect',
    'listen',
    'host',
    'port',
    'pathMappings',
    'justMyCode',
    'breakOnNonFinite',
    'options',
  ]) {
    assert.ok(attach.properties?.[key], `attach.${key}`);
  }
  for (const key of ['program', 'module', 'python', 'env', 'args']) {
    assert.equal(attach.properties?.[key], undefined, `attach.${key} means nothing to an attach`);
  }
  assert.deepEqual(attach.properties?.connect?.required, ['port']);
  assert.deepEqual(attach.properties?.pathMappings?.items?.required, ['localRoot', 'remoteRoot']);
  // VS Code adds these to every request's schema and refuses any other key (additionalProperties: false).
  const common: Schema = { properties: { name: {}, type: {}, request: {} } };
  const entries = [...ours.initialConfigurations, ...ours.configurationSnippets.map((s) => s.body)];
  for (const entry of entries) {
    const schema = ours.configurationAttributes[String(entry.request)];
    assert.ok(schema, `no schema for request ${String(entry.request)}`);
    const merged = { properties: { ...common.properties, ...schema.properties } };
    assert.deepEqual(undeclared(entry, merged, String(entry.name)), []);
  }
  // torchrun's schema names the keys torchrun.ts reads.
  const torchrunKeys = Object.keys(launch.properties?.torchrun?.properties ?? {}).sort();
  const source = fs.readFileSync(path.join(REPO, 'extension', 'src', 'debug', 'torchrun.ts'), 'utf8');
  const block = source.slice(
    source.indexOf('export interface TorchrunSettings'),
    source.indexOf('/** A "Debug Training"'),
  );
  assert.deepEqual(torchrunKeys, [...block.matchAll(/^ {2}(\w+)\?:/gm)].map((m) => m[1]).sort());
});
