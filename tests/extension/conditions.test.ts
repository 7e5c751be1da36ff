/** The expression under the cursor and the built-in condition list of "Add Tensor Breakpoint…". */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { expressionAt, fallbackSuggestions } from '../../extension/src/commands/conditions';

test('expressionAt picks the dotted name around the cursor', () => {
  const line = '    loss = criterion(model.fc1(x), y)';
  assert.equal(expressionAt(line, 5), 'loss');
  assert.equal(expressionAt(line, 8), 'loss', 'cursor right after the name');
  assert.equal(expressionAt(line, 28), 'model.fc1');
  assert.equal(expressionAt(line, 23), 'model');
  assert.equal(expressionAt(line, 31), 'x');
  assert.equal(expressionAt(line, 10), undefined, 'on "="');
  assert.equal(expressionAt('for x in data:', 1), undefined, 'keywords are not tensors');
  assert.equal(expressionAt('value = 3.5', 9), undefined, 'numbers are not names');
  assert.equal(expressionAt('', 0), undefined);
  assert.equal(expressionAt('loss.backward()', 2), 'loss', 'a method call after the name is not part of it');
  assert.equal(expressionAt('model.fc1.weight.grad', 12), 'model.fc1.weight');
});

test('fallback suggestions use the tensorsight builtin on the name', () => {
  const suggestions = fallbackSuggestions('loss');
  assert.ok(suggestions.length >= 4);
  assert.equal(suggestions[0]?.condition, 'tensorsight.nan(loss)');
  for (const s of suggestions) assert.match(s.condition, /^tensorsight\.\w+\(loss[,)]/);
});
