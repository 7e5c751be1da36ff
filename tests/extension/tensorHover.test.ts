/**
 * "View Tensor" in the editor's hover (extension/src/panel/tensorHover.ts): which names are asked about, which
 * debugger types count as tensors, the command link (trusted for View Tensor only), and the provider against a fake
 * stopped frame: an offer for a tensor, nothing for another value, an undefined name or when nothing is stopped.
 */
import './support/seam';
import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import {
  isHoverName,
  isTensorType,
  TensorHover,
  VIEW_COMMAND,
  viewTensorMarkdown,
} from '../../extension/src/panel/tensorHover';
import { fake, type Hover, PositionClass, Range } from './support/fakeVscode';

describe('the hover offer', () => {
  test('asks only about identifiers that are not keywords', () => {
    for (const name of ['weights', '_x1', 'self', 'loss']) assert.ok(isHoverName(name), name);
    for (const name of ['for', 'None', '1x', 'a.b', 'x[0]', '', 'a'.repeat(101)]) assert.ok(!isHoverName(name), name);
  });

  test('counts torch tensors, parameters, subclasses named so, and arrays as tensors', () => {
    for (const type of ['Tensor', 'Parameter', 'ndarray', 'DTensor', 'MaskedTensor']) assert.ok(isTensorType(type));
    for (const type of ['int', 'module', 'list', 'TensorDataset', 'tuple', undefined, 3]) {
      assert.ok(!isTensorType(type), String(type));
    }
  });

  test('links to View Tensor with the name as the command argument', () => {
    const text = viewTensorMarkdown('weights', 'View Tensor');
    assert.equal(text, `[$(eye) View Tensor](command:${VIEW_COMMAND}?%5B%22weights%22%5D "View Tensor: weights")`);
  });
});

describe('the hover provider at a stop', () => {
  const requests: unknown[] = [];
  const word = new Range(new PositionClass(4, 8), new PositionClass(4, 12));
  const document = (text: string) => ({ getWordRangeAtPosition: () => word, getText: () => text });
  const stoppedWith = (answer: (args: { expression: string }) => unknown) => {
    fake.activeStackItem = {
      frameId: 7,
      session: {
        customRequest: (command: string, args: { expression: string }) => {
          requests.push({ command, ...args });
          return Promise.resolve().then(() => answer(args));
        },
      },
    };
  };
  const hover = (text: string) =>
    new TensorHover().provideHover(
      document(text) as never,
      new PositionClass(4, 9) as never,
      {
        isCancellationRequested: false,
      } as never,
    ) as Promise<Hover | undefined>;

  beforeEach(() => {
    fake.reset();
    requests.length = 0;
  });

  test('offers View Tensor on a tensor, trusted for that command only', async () => {
    stoppedWith(() => ({ type: 'Tensor', result: 'f32[32, 16] cpu' }));
    const result = await hover('mean');
    assert.deepEqual(requests, [{ command: 'evaluate', expression: 'mean', frameId: 7, context: 'hover' }]);
    assert.ok(result);
    assert.equal(result.range, word);
    assert.match(result.contents.value, /command:tensorsight\.viewTensor\?%5B%22mean%22%5D/);
    assert.deepEqual(result.contents.isTrusted, { enabledCommands: [VIEW_COMMAND] });
  });

  test('offers nothing for another value, an undefined name, a keyword, or without a stop', async () => {
    stoppedWith(() => ({ type: 'int', result: '3' }));
    assert.equal(await hover('step'), undefined);
    stoppedWith(() => {
      throw new Error("NameError: name 'nope' is not defined");
    });
    assert.equal(await hover('nope'), undefined);
    assert.equal(await hover('return'), undefined);
    assert.equal(requests.length, 2, 'a keyword is never evaluated');
    fake.activeStackItem = undefined;
    assert.equal(await hover('mean'), undefined);
  });
});
