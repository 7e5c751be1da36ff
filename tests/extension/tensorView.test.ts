/**
 * View Tensor's pure half (extension/src/panel/tensorView.ts): the evaluate expression, decoding debugpy's answer,
 * rejecting payloads that are not viewer.py's with a message naming the field, the colours of NaN/Inf cells, the
 * histogram's log scale, and the comparison with the previous stop.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  cellColour,
  decodePythonString,
  expressionFromMenuArgument,
  heatmapDiff,
  heatmapRgba,
  histogramView,
  imageRgba,
  logHeight,
  MARK,
  MARK_COLOURS,
  parseEvaluateResult,
  parseViewPayload,
  PayloadError,
  sequentialColour,
  sliceDimensions,
  StopHistory,
  type TensorPayload,
  viewExpression,
} from '../../extension/src/panel/tensorView';

// What debugpy answered (clipboard context) for view_tensor(np.array([[1, nan, 3], [inf, 0, -inf]])), bins cut to 2.
const ANSWER =
  '\'{"meta": {"shape": [2, 3], "dtype": "float64", "device": "cpu", "library": "numpy", "elements": 6}, ' +
  '"counts": {"nan": 1, "posinf": 1, "neginf": 1, "zero": 1, "finite": 3}, ' +
  '"stats": {"min": 0.0, "max": 3.0, "mean": 1.3333333333333333, "std": 1.5275252316519468}, ' +
  '"histogram": {"edges": [0.0, 1.5, 3.0], "counts": [2, 1]}, "kind": "heatmap", "slice": [], ' +
  '"heatmap": {"rows": 2, "cols": 3, "blockRows": 1, "blockCols": 1, "sourceRows": 2, "sourceCols": 3, ' +
  '"values": [[1.0, null, 3.0], [null, 0.0, null]], "marks": [[0, 1, 0], [2, 0, 3]]}}\'';

function heatmap(values: Array<Array<number | null>>, marks?: number[][], slice: number[] = []): TensorPayload {
  const rows = values.length;
  const cols = values[0]?.length ?? 0;
  const finite = values.flat().filter((v): v is number => v !== null);
  return {
    kind: 'heatmap',
    meta: {
      shape: [...slice.map(() => 4), rows, cols],
      dtype: 'float32',
      device: 'cpu',
      library: 'torch',
      elements: 6,
    },
    counts: { nan: 0, posinf: 0, neginf: 0, zero: 0, finite: finite.length },
    stats: { min: Math.min(...finite), max: Math.max(...finite), mean: 0, std: 0 },
    histogram: { edges: [Math.min(...finite), Math.max(...finite)], counts: [finite.length] },
    slice,
    heatmap: {
      rows,
      cols,
      blockRows: 1,
      blockCols: 1,
      sourceRows: rows,
      sourceCols: cols,
      values,
      marks: marks ?? values.map((row) => row.map((v) => (v === null ? MARK.nan : MARK.finite))),
    },
  };
}

function pixel(rgba: Uint8ClampedArray, index: number): number[] {
  return [...rgba.slice(index * 4, index * 4 + 4)];
}

describe('the evaluate expression and its answer', () => {
  test('the expression reaches the agent by import, parenthesised, with the slice and normalisation', () => {
    assert.equal(viewExpression(' a + b '), "__import__('tensorsight').view_tensor((a + b))");
    assert.equal(
      viewExpression('x', [1, 2.7], 'global'),
      "__import__('tensorsight').view_tensor((x), index=[1, 2], normalize='global')",
    );
  });

  test('the expression of a Variables item, a Watch item, or nothing', () => {
    assert.equal(expressionFromMenuArgument({ variable: { name: 'w', evaluateName: 'model.w' } }), 'model.w');
    assert.equal(expressionFromMenuArgument({ variable: { name: 'w' } }), 'w');
    assert.equal(expressionFromMenuArgument({ expression: 'loss * 2' }), 'loss * 2');
    assert.equal(expressionFromMenuArgument({ expression: { evaluateName: 'batch[0]' } }), 'batch[0]');
    assert.equal(expressionFromMenuArgument(undefined), undefined);
    assert.equal(expressionFromMenuArgument({ variable: { evaluateName: '  ' } }), undefined);
  });

  test("debugpy's repr of a str decodes, escapes included", () => {
    assert.equal(decodePythonString(String.raw`'it\'s \\ "x"\n\x41\u00e9'`), 'it\'s \\ "x"\nAé');
    assert.equal(decodePythonString(`"it's"`), "it's");
    assert.throws(() => decodePythonString('<tensor 3x3>'), PayloadError);
    assert.throws(() => decodePythonString(String.raw`'bad \q'`), /bad escape/);
  });

  test("a real answer parses into viewer.py's payload", () => {
    const payload = parseEvaluateResult(ANSWER);
    assert.equal(payload.kind, 'heatmap');
    if (payload.kind !== 'heatmap') return;
    assert.deepEqual(payload.meta.shape, [2, 3]);
    assert.equal(payload.counts.nan, 1);
    assert.deepEqual(payload.heatmap.marks, [
      [0, 1, 0],
      [2, 0, 3],
    ]);
  });

  test('a message payload keeps its text and the well-formed meta', () => {
    const payload = parseViewPayload({ kind: 'message', message: 'the tensor is empty', meta: { shape: [0], x: 1 } });
    assert.deepEqual(payload, { kind: 'message', message: 'the tensor is empty', meta: { shape: [0] } });
  });
});

describe('payloads that are not the viewer’s are rejected, naming the field', () => {
  /** The real answer with one field replaced (a path of keys and indices). */
  const changed = (path: Array<string | number>, value: unknown): unknown => {
    const payload = JSON.parse(decodePythonString(ANSWER)) as unknown;
    let node = payload as Record<string | number, unknown>;
    for (const key of path.slice(0, -1)) node = node[key] as Record<string | number, unknown>;
    node[path[path.length - 1] ?? ''] = value;
    return payload;
  };
  const cases: Array<[string, () => unknown, RegExp]> = [
    ['not an object', () => [1, 2], /^payload: expected an object/],
    ['an unknown kind', () => changed(['kind'], 'volume'), /payload\.kind: expected scalar, line, heatmap/],
    ['a negative count', () => changed(['counts', 'nan'], -1), /payload\.counts\.nan: expected a count/],
    [
      'a missing dtype',
      () => changed(['meta', 'dtype'], undefined),
      /payload\.meta\.dtype: expected a string, got nothing/,
    ],
    [
      'a short row',
      () => changed(['heatmap', 'values', 1], [0]),
      /payload\.heatmap\.values\[1\]: expected 3 items, got "1 items"/,
    ],
    [
      'a bad mark',
      () => changed(['heatmap', 'marks', 0, 2], 7),
      /payload\.heatmap\.marks\[0\]\[2\]: expected a cell mark 0\.\.4/,
    ],
    [
      'counts not matching the edges',
      () => changed(['histogram', 'counts'], [1]),
      /payload\.histogram\.counts: expected 2 items/,
    ],
    ['a string for a number', () => changed(['stats', 'mean'], '1.3'), /payload\.stats\.mean: expected a number/],
  ];
  for (const [name, mutate, message] of cases) {
    test(name, () => {
      assert.throws(
        () => parseViewPayload(mutate()),
        (error: unknown) => {
          assert.ok(error instanceof PayloadError);
          assert.match(error.message, message);
          return true;
        },
      );
    });
  }

  test('an answer that is not JSON says so', () => {
    assert.throws(() => parseEvaluateResult("'{oops'"), /the answer is not JSON/);
  });
});

describe('colours', () => {
  test('NaN, +Inf, -Inf and empty cells have their own colours, never a value colour', () => {
    assert.deepEqual(cellColour(null, MARK.nan, 0, 1), MARK_COLOURS.nan);
    assert.deepEqual(cellColour(null, MARK.posinf, 0, 1), MARK_COLOURS.posinf);
    assert.deepEqual(cellColour(null, MARK.neginf, 0, 1), MARK_COLOURS.neginf);
    assert.deepEqual(cellColour(null, MARK.empty, 0, 1), MARK_COLOURS.empty);
    const specials = Object.values(MARK_COLOURS).map((c) => c.join());
    assert.equal(new Set(specials).size, 4);
    for (let t = 0; t <= 1; t += 0.05) assert.ok(!specials.includes(sequentialColour(t).join()), `t=${t}`);
  });

  test('finite cells run from the low to the high end of the map', () => {
    assert.deepEqual(cellColour(-2, MARK.finite, -2, 6), sequentialColour(0));
    assert.deepEqual(cellColour(6, MARK.finite, -2, 6), sequentialColour(1));
    assert.deepEqual(cellColour(5, MARK.finite, 5, 5), sequentialColour(0.5), 'a constant grid is mid-map');
    assert.notDeepEqual(sequentialColour(0), sequentialColour(1));
  });

  test('a heatmap puts each cell at its row-major place, marks first', () => {
    const payload = parseEvaluateResult(ANSWER);
    assert.equal(payload.kind, 'heatmap');
    if (payload.kind !== 'heatmap') return;
    const { rgba, low, high } = heatmapRgba(payload.heatmap);
    assert.deepEqual([low, high], [0, 3]);
    assert.equal(rgba.length, 2 * 3 * 4);
    assert.deepEqual(pixel(rgba, 1), [...MARK_COLOURS.nan]);
    assert.deepEqual(pixel(rgba, 3), [...MARK_COLOURS.posinf]);
    assert.deepEqual(pixel(rgba, 5), [...MARK_COLOURS.neginf]);
    assert.deepEqual(pixel(rgba, 2), [...sequentialColour(1)]);
    assert.deepEqual(pixel(rgba, 4), [...sequentialColour(0)]);
  });

  test('an image pixel with a NaN in any channel is marked; others are RGB or grey', () => {
    const channel = (values: Array<Array<number | null>>, marks: number[][]) => ({
      rows: 1,
      cols: 2,
      blockRows: 1,
      blockCols: 1,
      sourceRows: 1,
      sourceCols: 2,
      values,
      marks,
      low: 0,
      high: 1,
    });
    const rgb = imageRgba([
      channel([[1, 0]], [[0, 0]]),
      channel([[0, null]], [[0, MARK.nan]]),
      channel([[0.5, 0]], [[0, 0]]),
    ]);
    assert.deepEqual(pixel(rgb, 0), [255, 0, 128, 255]);
    assert.deepEqual(pixel(rgb, 1), [...MARK_COLOURS.nan]);
    const grey = imageRgba([channel([[0.5, 2]], [[0, 0]])]);
    assert.deepEqual(pixel(grey, 0), [128, 128, 128, 255]);
    assert.deepEqual(pixel(grey, 1), [255, 255, 255, 255], 'clamped to the channel range');
  });
});

describe('histogram', () => {
  test('heights are log-scaled against the largest bin', () => {
    assert.equal(logHeight(0, 1000), 0);
    assert.equal(logHeight(1000, 1000), 1);
    assert.ok(Math.abs(logHeight(31, 1023) - 0.5) < 1e-12, 'log(32)/log(1024) is one half');
    assert.ok(logHeight(1, 1e6) > 0.04, 'a single outlier stays visible next to a million');
    assert.equal(logHeight(5, 0), 0);
  });

  test('the current and previous stops share one axis and one scale, with the special counts side by side', () => {
    const before = heatmap([[0, 1]]);
    before.histogram = { edges: [0, 1, 2], counts: [10, 1] };
    before.counts = { ...before.counts, nan: 0, zero: 3 };
    const now = heatmap([[1, 4]]);
    now.histogram = { edges: [1, 4], counts: [100] };
    now.counts = { ...now.counts, nan: 2, zero: 3 };
    const view = histogramView(now, before);
    assert.deepEqual([view.low, view.high], [0, 4]);
    assert.deepEqual(
      view.bars.map((b) => [b.x0, b.x1, b.height]),
      [[0.25, 1, 1]],
    );
    assert.deepEqual(
      view.previous?.map((b) => [b.x0, b.x1, b.height]),
      [
        [0, 0.25, logHeight(10, 100)],
        [0.25, 0.5, logHeight(1, 100)],
      ],
    );
    assert.deepEqual(
      view.specials.find((s) => s.key === 'nan'),
      { key: 'nan', count: 2, previous: 0 },
    );
    assert.equal(histogramView(now).previous, undefined);
    assert.equal(histogramView(now).specials[0]?.previous, undefined);
  });
});

describe('since the last stop', () => {
  test('the heatmap diff subtracts finite cells and counts cells that became NaN', () => {
    const before = heatmap([[1, 2, 3]]);
    const now = heatmap([[1, 5, null]]);
    const diff = heatmapDiff(now, before);
    assert.ok(diff);
    assert.deepEqual(diff.delta, [[0, 3, null]]);
    assert.equal(diff.largest, 3);
    assert.equal(diff.changedMarks, 1);
    assert.deepEqual(pixel(diff.rgba, 0), [255, 255, 255, 255], 'no change is white');
    assert.deepEqual(pixel(diff.rgba, 1), [178, 24, 43, 255], 'the largest rise is full red');
    assert.deepEqual(pixel(diff.rgba, 2), [...MARK_COLOURS.nan], 'a cell that became NaN shows as NaN');
  });

  test('no heatmap diff without a previous stop, or when the shape or slice differ', () => {
    const now = heatmap([[1, 2]], undefined, [0]);
    assert.equal(heatmapDiff(now, undefined), undefined);
    assert.equal(heatmapDiff(now, heatmap([[1, 2, 3]], undefined, [0])), undefined);
    assert.equal(heatmapDiff(now, heatmap([[1, 2]], undefined, [1])), undefined);
    assert.ok(heatmapDiff(now, heatmap([[1, 2]], undefined, [0])));
  });

  test('the previous payload is from an earlier stop of the same session and expression', () => {
    const history = new StopHistory();
    const a = heatmap([[1]]);
    const b = heatmap([[2]]);
    const c = heatmap([[3]]);
    assert.equal(history.record('s1', 'w', 1, a), undefined, 'the first view has nothing to compare with');
    assert.equal(history.record('s1', 'w', 1, b), undefined, 'a refresh at the same stop is not a previous stop');
    assert.equal(history.record('s1', 'w', 2, c), b, 'the newest payload of stop 1');
    assert.equal(history.record('s1', 'w', 2, a), b, 'still stop 1 while at stop 2');
    assert.equal(history.record('s1', 'x', 2, a), undefined, 'another expression');
    assert.equal(history.record('s2', 'w', 3, a), undefined, 'another session');
    history.forget('s1');
    assert.equal(history.record('s1', 'w', 3, a), undefined, 'an ended session is forgotten');
  });

  test('the history keeps at most its limit of expressions, dropping the least recently viewed', () => {
    const history = new StopHistory(2);
    history.record('s', 'a', 1, heatmap([[1]]));
    history.record('s', 'b', 1, heatmap([[1]]));
    history.record('s', 'a', 1, heatmap([[1]]));
    history.record('s', 'c', 1, heatmap([[1]]));
    assert.ok(history.record('s', 'a', 2, heatmap([[1]])), 'a was viewed recently and kept');
    assert.equal(history.record('s', 'b', 2, heatmap([[1]])), undefined, 'b was dropped');
  });
});

test('a heatmap of rank > 2 offers one picker per leading dimension', () => {
  assert.deepEqual(sliceDimensions(heatmap([[1]], undefined, [2, 0])), [
    { size: 4, index: 2 },
    { size: 4, index: 0 },
  ]);
  assert.deepEqual(sliceDimensions(heatmap([[1]])), []);
});
