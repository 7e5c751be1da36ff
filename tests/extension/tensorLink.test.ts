/**
 * The first-NaN stop's link to View Tensor (extension/src/panel/tensorLink.ts): the start the extension passes the
 * agent, the launch option that carries it, and the strict reading of a clicked link, which maps a token the agent
 * writes (pyhelpers/tensorsight/agent/sentinel/view_link.py) to a fixed expression and refuses anything else.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { agentEnvironment } from '../../extension/src/debug/launchConfig';
import { EXTENSION_ID, parseViewLink, VIEW_LINK_PATH, viewLinkStart } from '../../extension/src/panel/tensorLink';
import { PACKAGE_JSON } from './support/paths';

const SESSION = '0b9f6c3e-5d0a-4d8e-9a57-2f6c1e0d7a11';
const RECORD = "__import__('tensorsight').last_nonfinite()";

/** A link as the agent completes it, split the way vscode.Uri splits it for the handler. */
function clicked(link: string): { path: string; query: string } {
  const url = new URL(link);
  return { path: url.pathname, query: url.search.slice(1) };
}

describe('the link the agent completes', () => {
  test('names the editor scheme, this extension and the session', () => {
    assert.equal(EXTENSION_ID, `${String(PACKAGE_JSON.publisher)}.${String(PACKAGE_JSON.name)}`);
    assert.equal(
      viewLinkStart('vscode', EXTENSION_ID, SESSION),
      `vscode://tensorsight.tensorsight/viewTensor?session=${SESSION}`,
    );
    assert.equal(
      viewLinkStart('code-oss', 'Tensorsight.TensorSight', 'abc')?.split('?')[0],
      'code-oss://tensorsight.tensorsight/viewTensor',
    );
  });

  test('is left out when a part is not usable', () => {
    assert.equal(viewLinkStart('', EXTENSION_ID, SESSION), undefined);
    assert.equal(viewLinkStart('vs code', EXTENSION_ID, SESSION), undefined);
    assert.equal(viewLinkStart('vscode', 'no-dot', SESSION), undefined);
    assert.equal(viewLinkStart('vscode', EXTENSION_ID, 'a&tensor=x'), undefined);
  });

  test('travels in TENSORSIGHT_OPTIONS unless the configuration sets its own', () => {
    const context = {
      pyhelpers: '/p',
      separator: ':',
      baseEnv: {},
      sessionId: SESSION,
      viewLink: 'vscode://a.b/viewTensor',
    };
    const options = (env: Record<string, string | null>) => JSON.parse(String(env.TENSORSIGHT_OPTIONS)) as object;
    assert.deepEqual(options(agentEnvironment(undefined, { breakOnNonFinite: true }, context)), {
      breakOnNonFinite: true,
      viewTensorLink: 'vscode://a.b/viewTensor',
    });
    assert.deepEqual(options(agentEnvironment(undefined, { viewTensorLink: null }, context)), { viewTensorLink: null });
    assert.deepEqual(options(agentEnvironment(undefined, {}, { ...context, viewLink: undefined })), {});
  });
});

describe('a clicked link', () => {
  const start = viewLinkStart('vscode', EXTENSION_ID, SESSION) ?? '';

  test("opens the op's output, or a gradient or input of the record, by the Variables path", () => {
    const { path, query } = clicked(`${start}&tensor=output`);
    assert.equal(path, VIEW_LINK_PATH);
    assert.deepEqual(parseViewLink(path, query), {
      session: SESSION,
      expression: `${RECORD}.output`,
      label: '(nonfinite).output',
    });
    const grad = clicked(`${start}&tensor=produced_grads.12`);
    assert.deepEqual(parseViewLink(grad.path, grad.query), {
      session: SESSION,
      expression: `${RECORD}.produced_grads[12]`,
      label: '(nonfinite).produced_grads[12]',
    });
    assert.equal(
      parseViewLink(VIEW_LINK_PATH, `tensor=inputs.0&session=${SESSION}`)?.expression,
      `${RECORD}.inputs[0]`,
    );
  });

  test('carries no code: any other token, key, path or session is refused', () => {
    const refused = [
      [VIEW_LINK_PATH, `session=${SESSION}&tensor=__import__('os').getcwd()`],
      [VIEW_LINK_PATH, `session=${SESSION}&tensor=output.__class__`],
      [VIEW_LINK_PATH, `session=${SESSION}&tensor=inputs.100`],
      [VIEW_LINK_PATH, `session=${SESSION}&tensor=inputs[0]`],
      [VIEW_LINK_PATH, `session=${SESSION}&tensor=output&expression=x`],
      [VIEW_LINK_PATH, `session=${SESSION}&tensor=output&tensor=inputs.0`],
      [VIEW_LINK_PATH, `session=${SESSION}&tensor=output=1`],
      [VIEW_LINK_PATH, `tensor=output`],
      [VIEW_LINK_PATH, `session=a b&tensor=output`],
      [VIEW_LINK_PATH, `session=&tensor=output`],
      [VIEW_LINK_PATH, ''],
      ['/viewtensor', `session=${SESSION}&tensor=output`],
      ['/other', `session=${SESSION}&tensor=output`],
      [VIEW_LINK_PATH, `session=${SESSION}&tensor=output&${'x'.repeat(400)}`],
    ];
    for (const [path, query] of refused) assert.equal(parseViewLink(path ?? '', query ?? ''), undefined, query);
  });
});
