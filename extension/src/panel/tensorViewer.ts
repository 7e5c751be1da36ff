/**
 * "TensorSight: View Tensor" (command `tensorsight.viewTensor`, from the Variables and Watch context menus or the
 * palette) and its webview panel. The command evaluates `tensorsight.view_tensor(<expr>)` (the agent's viewer.py)
 * with the `clipboard` context, which debugpy answers untruncated, in the focused stack frame; the answer is checked
 * and turned into pixels by panel/tensorView.ts, and media/webview/tensor.js draws it. The panel re-evaluates on the
 * next stop of the same session, and compares with the payload of the previous stop ("since the last stop"). Its URI
 * handler opens the tensor that the first-NaN stop's link names (panel/tensorLink.ts). Wired by extension.ts.
 */
import * as path from 'node:path';
import type { ExtensionPaths } from '../common/paths';
import {
  debug,
  type DebugAdapterTrackerFactory,
  type DebugSession,
  type DebugStackFrame,
  type Disposable,
  env,
  l10n,
  type LogOutputChannel,
  Uri,
  type UriHandler,
  ViewColumn,
  type WebviewPanel,
  window,
} from '../common/vscodeapi';
import { sessionIdOf } from '../debug/sessions';
import { renderPage } from './html';
import { parseViewLink, type ViewLink } from './tensorLink';
import {
  expressionFromMenuArgument,
  heatmapDiff,
  heatmapRgba,
  histogramView,
  imageRgba,
  MARK_COLOURS,
  type Normalize,
  parseEvaluateResult,
  sliceDimensions,
  StopHistory,
  type TensorPayload,
  toBase64,
  viewExpression,
} from './tensorView';

const REFRESH_DELAY_MS = 150; // the Call Stack focuses the top frame right after a stop: one evaluate, not two

interface Viewing {
  sessionId: string;
  expression: string;
  /** The name shown in the panel: the expression, or the Variables path of a stop's tensor (`(nonfinite).output`). */
  label: string;
  index: number[];
  normalize: Normalize;
}

type WebviewMessage =
  { type: 'slice'; index: unknown[] } | { type: 'normalize'; value: unknown } | { type: 'refresh' } | { type: 'ready' };

export class TensorViewer {
  private panel: WebviewPanel | undefined;
  private viewing: Viewing | undefined;
  private readonly history = new StopHistory();
  private readonly stops = new Map<string, number>();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private generation = 0;
  /** The last message posted: a page that loads after it was posted asks for it again ('ready'). */
  private lastMessage: object | undefined;

  constructor(
    private readonly paths: ExtensionPaths,
    private readonly log: LogOutputChannel,
  ) {}

  /** Counts each session's `stopped` events (observe only), so a payload knows which stop it belongs to. */
  stopCounter(): DebugAdapterTrackerFactory {
    return {
      createDebugAdapterTracker: (session: DebugSession) => ({
        onDidSendMessage: (message: unknown) => {
          const m = message as { type?: string; event?: string };
          if (m.type === 'event' && m.event === 'stopped') this.stops.set(session.id, this.stopOf(session.id) + 1);
        },
      }),
    };
  }

  /** Listeners the extension disposes: refresh on the next stop, forget ended sessions. */
  listeners(): Disposable[] {
    return [
      debug.onDidChangeActiveStackItem(() => {
        if (this.panel && this.viewing) this.scheduleRefresh();
      }),
      debug.onDidTerminateDebugSession((session: DebugSession) => {
        this.history.forget(session.id);
        this.stops.delete(session.id);
      }),
    ];
  }

  /** The command: the expression comes from the context-menu item, or is asked for. */
  async viewTensor(argument?: unknown): Promise<void> {
    const frame = focusedFrame();
    if (!frame) {
      void window.showWarningMessage(l10n.t('View Tensor needs a debug session stopped at a breakpoint.'));
      return;
    }
    const expression =
      expressionFromMenuArgument(argument) ??
      (
        await window.showInputBox({
          prompt: l10n.t('A tensor or array expression, evaluated in the current stack frame'),
          placeHolder: 'weights',
        })
      )?.trim();
    if (!expression) return;
    this.viewing = { sessionId: frame.session.id, expression, label: expression, index: [], normalize: 'channel' };
    this.show(expression);
    await this.refresh();
  }

  /**
   * The URI handler of the first-NaN stop's link (panel/tensorLink.ts): a link of ours opens the viewer on the
   * stop's tensor in the focused frame of the session the link names; anything else is refused with a message.
   */
  uriHandler(): UriHandler {
    return {
      handleUri: (uri: { path: string; query: string }) => {
        const link = parseViewLink(uri.path, uri.query);
        if (!link) {
          this.log.warn(`ignored a link that is not a View Tensor link: ${uri.path}`);
          void window.showWarningMessage(l10n.t('TensorSight cannot open this link.'));
          return;
        }
        void this.viewStopTensor(link);
      },
    };
  }

  private async viewStopTensor(link: ViewLink): Promise<void> {
    const frame = focusedFrame();
    if (!frame || tensorSightSessionOf(frame.session) !== link.session) {
      void window.showWarningMessage(
        l10n.t('This link opens a tensor of a debug session stopped at its first NaN/Inf, and it is not stopped now.'),
      );
      return;
    }
    this.viewing = {
      sessionId: frame.session.id,
      expression: link.expression,
      label: link.label,
      index: [],
      normalize: 'channel',
    };
    this.show(link.label);
    await this.refresh();
  }

  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    this.panel?.dispose();
  }

  private stopOf(sessionId: string): number {
    return this.stops.get(sessionId) ?? 0;
  }

  private scheduleRefresh(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.refresh();
    }, REFRESH_DELAY_MS);
  }

  private show(expression: string): void {
    const title = l10n.t('View Tensor: {0}', expression);
    if (this.panel) {
      this.panel.title = title;
      this.panel.reveal(undefined, true);
      return;
    }
    const panel = window.createWebviewPanel('tensorsight.viewTensor', title, ViewColumn.Beside, {
      enableScripts: true,
      retainContextWhenHidden: true,
      localResourceRoots: [Uri.file(this.paths.webview)],
    });
    const asset = (name: string) =>
      panel.webview.asWebviewUri(Uri.file(path.join(this.paths.webview, name))).toString();
    panel.webview.html = renderPage({
      title,
      cspSource: panel.webview.cspSource,
      scripts: [asset('tensor.js')],
      styles: [asset('webview.css'), asset('tensor.css')],
      lang: env.language(),
      initialData: { strings: viewerStrings(), colours: MARK_COLOURS },
    });
    panel.onDidDispose(() => {
      this.panel = undefined;
      this.viewing = undefined;
      this.lastMessage = undefined;
    });
    panel.webview.onDidReceiveMessage((message: WebviewMessage) => {
      if (message.type === 'ready') {
        if (this.lastMessage) void panel.webview.postMessage(this.lastMessage);
        return;
      }
      if (!this.viewing) return;
      if (message.type === 'slice' && Array.isArray(message.index)) {
        this.viewing.index = message.index.map((i) =>
          typeof i === 'number' && Number.isFinite(i) && i > 0 ? Math.trunc(i) : 0,
        );
      } else if (message.type === 'normalize') {
        this.viewing.normalize = message.value === 'global' ? 'global' : 'channel';
      }
      void this.refresh();
    });
    this.panel = panel;
  }

  /** Evaluates the viewed expression in the focused frame and posts the drawing (or the problem) to the panel. */
  private async refresh(): Promise<void> {
    const viewing = this.viewing;
    if (!this.panel || !viewing) return;
    const generation = ++this.generation;
    const post = (message: object) => {
      if (generation !== this.generation) return;
      this.lastMessage = message;
      void this.panel?.webview.postMessage(message);
    };
    const frame = focusedFrame();
    if (!frame || frame.session.id !== viewing.sessionId) {
      post({ type: 'problem', expression: viewing.label, text: l10n.t('The debug session is not stopped.') });
      return;
    }
    const stop = this.stopOf(frame.session.id);
    post({ type: 'loading', expression: viewing.label });
    let payload;
    try {
      const answer = (await frame.session.customRequest('evaluate', {
        expression: viewExpression(viewing.expression, viewing.index, viewing.normalize),
        frameId: frame.frameId,
        context: 'clipboard',
      })) as { result?: unknown };
      payload = parseEvaluateResult(typeof answer.result === 'string' ? answer.result : '');
    } catch (error) {
      const text = error instanceof Error ? error.message : String(error);
      this.log.warn(`View Tensor of "${viewing.expression}": ${text}`);
      post({
        type: 'problem',
        expression: viewing.label,
        text: l10n.t('Could not view {0}: {1}', viewing.label, text),
      });
      return;
    }
    if (payload.kind === 'message') {
      post({ type: 'problem', expression: viewing.label, text: payload.message, meta: payload.meta });
      return;
    }
    const previous = this.history.record(viewing.sessionId, viewing.expression, stop, payload);
    post(drawing(viewing, payload, previous));
  }
}

/** The message the webview draws: the payload (for text and hovers) and everything computed from it. */
export function drawing(viewing: Viewing, payload: TensorPayload, previous: TensorPayload | undefined): object {
  const diff = heatmapDiff(payload, previous);
  let picture: object = { kind: payload.kind };
  if (payload.kind === 'heatmap') {
    const heat = heatmapRgba(payload.heatmap);
    picture = { kind: 'heatmap', rgba: toBase64(heat.rgba), low: heat.low, high: heat.high };
  } else if (payload.kind === 'image') {
    picture = { kind: 'image', images: payload.image.images.map((image) => toBase64(imageRgba(image.channels))) };
  }
  return {
    type: 'view',
    expression: viewing.label,
    normalize: viewing.normalize,
    payload,
    picture,
    histogram: histogramView(payload, previous),
    hasPrevious: previous !== undefined,
    diff: diff && {
      rows: diff.rows,
      cols: diff.cols,
      largest: diff.largest,
      changedMarks: diff.changedMarks,
      rgba: toBase64(diff.rgba),
    },
    slices: sliceDimensions(payload),
  };
}

/** The TensorSight session id of a debug session, or of the session it is a child of (a subprocess's session). */
function tensorSightSessionOf(session: DebugSession | undefined): string | undefined {
  for (let current = session, depth = 0; current && depth < 8; current = current.parentSession, depth++) {
    const id = sessionIdOf(current);
    if (id) return id;
  }
  return undefined;
}

function focusedFrame(): DebugStackFrame | undefined {
  const item = debug.activeStackItem();
  return item && typeof (item as Partial<DebugStackFrame>).frameId === 'number' ? (item as DebugStackFrame) : undefined;
}

function viewerStrings(): Record<string, string> {
  return {
    loading: l10n.t('Evaluating…'),
    histogram: l10n.t('Histogram (log counts)'),
    zero: l10n.t('zeros'),
    nan: l10n.t('NaN'),
    posinf: l10n.t('+Inf'),
    neginf: l10n.t('-Inf'),
    min: l10n.t('min'),
    max: l10n.t('max'),
    mean: l10n.t('mean'),
    std: l10n.t('σ'),
    previous: l10n.t('previous stop'),
    current: l10n.t('this stop'),
    sinceLastStop: l10n.t('Since the last stop'),
    noPrevious: l10n.t('Step and view again to compare with this stop.'),
    diffShapes: l10n.t('The heatmap is compared only when both stops have the same shape and slice.'),
    diffLargest: l10n.t('Largest change {0}; {1} cells changed between finite and NaN/Inf.'),
    slice: l10n.t('Slice'),
    normalize: l10n.t('Normalize'),
    perChannel: l10n.t('per channel'),
    global: l10n.t('over all channels'),
    refresh: l10n.t('Refresh'),
    pooled: l10n.t('Each cell is the mean of a {0}×{1} block.'),
    cell: l10n.t('rows {0}, cols {1}'),
    images: l10n.t('{0} of {1} images shown ({2}).'),
    line: l10n.t('Values by index (min and max per bucket of {0}).'),
    scalar: l10n.t('A single value.'),
    empty: l10n.t('no value'),
  };
}
