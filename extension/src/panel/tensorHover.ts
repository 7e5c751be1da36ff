/**
 * "View Tensor" in the editor's hover of a Python file while a debug session is stopped: when the name under the
 * pointer holds a tensor or an array in the focused stack frame, the hover offers a command link that opens the
 * viewer on it (command `tensorsight.viewTensor`, panel/tensorViewer.ts). VS Code shows its own debugger hover over
 * the stopped frame's file and the editor's hover (this one, beside the language server's) while Alt is held, and
 * in other files. The name is checked with one `evaluate` of the bare name (a lookup, nothing the program sees); its
 * `type` says whether it is a tensor. The Markdown is trusted for that one command only. Registered by extension.ts.
 */
import {
  type CancellationToken,
  debug,
  type DebugStackFrame,
  Hover,
  type HoverProvider,
  type HoverResult,
  l10n,
  MarkdownString,
  type Position,
  type TextDocument,
} from '../common/vscodeapi';

export const VIEW_COMMAND = 'tensorsight.viewTensor';
const NAME = /^[A-Za-z_][A-Za-z0-9_]{0,99}$/;
const KEYWORDS = new Set([
  'False',
  'None',
  'True',
  'and',
  'as',
  'assert',
  'async',
  'await',
  'break',
  'class',
  'continue',
  'def',
  'del',
  'elif',
  'else',
  'except',
  'finally',
  'for',
  'from',
  'global',
  'if',
  'import',
  'in',
  'is',
  'lambda',
  'nonlocal',
  'not',
  'or',
  'pass',
  'raise',
  'return',
  'try',
  'while',
  'with',
  'yield',
]);

/** A name worth asking the debugger about: an identifier, not a keyword. */
export function isHoverName(name: string): boolean {
  return NAME.test(name) && !KEYWORDS.has(name);
}

/** Whether debugpy's `type` of a value is one the viewer draws: torch tensors (and subclasses named so), arrays. */
export function isTensorType(type: unknown): boolean {
  return typeof type === 'string' && /^(Tensor|Parameter|Buffer|ndarray|memmap|[A-Za-z]+Tensor)$/.test(type);
}

/** The hover's Markdown: a link that runs View Tensor on `name` (the command takes the expression as argument). */
export function viewTensorMarkdown(name: string, label: string): string {
  const argument = encodeURIComponent(JSON.stringify([name]));
  return `[$(eye) ${label}](command:${VIEW_COMMAND}?${argument} "${label}: ${name}")`;
}

export class TensorHover implements HoverProvider {
  async provideHover(
    document: TextDocument,
    position: Position,
    token: CancellationToken,
  ): Promise<HoverResult | undefined> {
    const frame = focusedFrame();
    const range = frame && document.getWordRangeAtPosition(position);
    if (!frame || !range) return undefined;
    const name = document.getText(range);
    if (!isHoverName(name)) return undefined;
    let type: unknown;
    try {
      const answer = (await frame.session.customRequest('evaluate', {
        expression: name,
        frameId: frame.frameId,
        context: 'hover',
      })) as { type?: unknown };
      type = answer.type;
    } catch {
      return undefined; // not defined in this frame
    }
    if (token.isCancellationRequested || !isTensorType(type)) return undefined;
    const markdown = new MarkdownString(viewTensorMarkdown(name, l10n.t('View Tensor')), true);
    markdown.isTrusted = { enabledCommands: [VIEW_COMMAND] };
    return new Hover(markdown, range);
  }
}

function focusedFrame(): DebugStackFrame | undefined {
  const item = debug.activeStackItem();
  return item && typeof (item as Partial<DebugStackFrame>).frameId === 'number' ? (item as DebugStackFrame) : undefined;
}
