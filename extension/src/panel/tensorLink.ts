/**
 * The first-NaN stop's link to View Tensor, both ends of it, as pure functions:
 *   - `viewLinkStart` is what "Debug Training" passes the agent in the `viewTensorLink` launch option
 *     (`<vscode.env.uriScheme>://<extension id>/viewTensor?session=<TensorSight session id>`); the agent adds
 *     `tensor=output` (pyhelpers/tensorsight/agent/sentinel/view_link.py) and ends the stop's reason with the link;
 *   - `parseViewLink` checks a URI the extension's URI handler receives (VS Code routes a clicked link of its own
 *     scheme, from the exception widget or the Debug Console, to `window.registerUriHandler`) and maps its token to
 *     the expression the viewer evaluates. A link carries a token, never code: anything else is refused.
 * Used by debug/provider.ts (the option) and panel/tensorViewer.ts (the handler); pinned by
 * tests/extension/tensorLink.test.ts.
 */

/** `publisher.name` of package.json (tests/extension/tensorLink.test.ts checks it): the link's authority. */
export const EXTENSION_ID = 'tensorsight.tensorsight';
export const VIEW_LINK_PATH = '/viewTensor';

/** The record the agent keeps for the stop (`tensorsight.last_nonfinite()`, Variables' `(nonfinite)` entry). */
const RECORD = "__import__('tensorsight').last_nonfinite()";
const TOKEN = /^(output|(produced_grads|incoming_grads|inputs)\.(\d{1,2}))$/;
const SESSION = /^[A-Za-z0-9-]{1,80}$/;
const AUTHORITY = /^[a-z0-9-]+\.[a-z0-9-]+$/i;

export interface ViewLink {
  /** The TensorSight session id (the launch's `tensorsightSessionId`) the stop belongs to. */
  session: string;
  /** What the viewer evaluates in the stopped frame. */
  expression: string;
  /** What the viewer shows as the tensor's name: the Variables entry's path, e.g. `(nonfinite).output`. */
  label: string;
}

/** The start of the link the agent completes, or undefined when the scheme or the extension id is unusable. */
export function viewLinkStart(scheme: string, extensionId: string, session: string): string | undefined {
  if (!/^[a-z][a-z0-9+.-]{2,}$/i.test(scheme) || !AUTHORITY.test(extensionId) || !SESSION.test(session)) {
    return undefined;
  }
  return `${scheme}://${extensionId.toLowerCase()}${VIEW_LINK_PATH}?session=${session}`;
}

/**
 * The view a link asks for, or undefined for a URI that is not one of ours: another path, a query with any other
 * key, a key twice, a token the agent does not write, a session id that is not one.
 */
export function parseViewLink(path: string, query: string): ViewLink | undefined {
  if (path !== VIEW_LINK_PATH || query.length > 300) return undefined;
  const values = new Map<string, string>();
  for (const pair of query.split('&')) {
    const [key, value, ...rest] = pair.split('=');
    if (key === undefined || value === undefined || rest.length > 0 || values.has(key)) return undefined;
    if (key !== 'session' && key !== 'tensor') return undefined;
    values.set(key, value);
  }
  const session = values.get('session');
  const token = TOKEN.exec(values.get('tensor') ?? '');
  if (!session || !SESSION.test(session) || !token) return undefined;
  const [, whole, list, index] = token;
  if (whole === 'output') return { session, expression: `${RECORD}.output`, label: '(nonfinite).output' };
  return {
    session,
    expression: `${RECORD}.${list}[${Number(index)}]`,
    label: `(nonfinite).${list}[${Number(index)}]`,
  };
}
