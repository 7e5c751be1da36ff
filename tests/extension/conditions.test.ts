/**
 * The expression under the cursor, the built-in condition list and the never-stops warning of "Add Tensor
 * Breakpoint…".
 */
import './support/seam';
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { conditionWarning, expressionAt, fallbackSuggestions } from '../../extension/src/commands/conditions';

test('expressionAt picks the dotted name around the cursor', () => {
  const line = '    loss = criterion(model.fc1(x), y)';
  assert.equal(expressionAt(line, 5), 'loss');
  assert.equal(expressionAt(line, 8), 'loss', 'cursor right after the name');
  assert.equal(expressionAt(line, 28), 'model', 'a called attribute is not a value: its receiver is');
  assert.equal(expressionAt(line, 23), 'model');
  assert.equal(expressionAt(line, 31), 'x');
  assert.equal(expressionAt(line, 10), undefined, 'on "="');
  assert.equal(expressionAt('for x in data:', 1), undefined, 'keywords are not tensors');
  assert.equal(expressionAt('value = 3.5', 9), undefined, 'numbers are not names');
  assert.equal(expressionAt('', 0), undefined);
  assert.equal(expressionAt('loss.backward()', 2), 'loss', 'a method call after the name is not part of it');
  assert.equal(expressionAt('model.fc1.weight.grad', 12), 'model.fc1.weight');
});

test('on a method the line calls, expressionAt offers its receiver, never the method', () => {
  assert.equal(expressionAt('    loss.backward()', 10), 'loss', 'cursor on "backward"');
  assert.equal(expressionAt('    loss.backward()', 17), 'loss', 'cursor at the end of "backward"');
  assert.equal(expressionAt('print(loss.item ())', 12), 'loss', 'a space before the call');
  assert.equal(expressionAt('y = self.encoder.proj(x)', 18), 'self.encoder');
  assert.equal(expressionAt('g = model.fc1.weight.grad', 22), 'model.fc1.weight.grad', 'not called: kept');
  assert.equal(expressionAt('out = model(x)', 8), 'model', 'a called plain name is left to the server');
  assert.equal(expressionAt('    loss.mean().backward()', 18), undefined, 'a method of a call result: nothing');
  assert.equal(expressionAt('    loss.mean().backward()', 13), 'loss', 'on "mean": its receiver');
  assert.equal(expressionAt('g = x[0].grad', 10), undefined, 'an attribute of a subscript: no name to test');
});

test('the never-stops warning says it once', () => {
  const server = {
    undefinedNames: ['los'],
    message: '`los` is not defined at line 2: debugpy would treat the condition as false and never stop.',
    syntaxError: null,
  };
  const warning = conditionWarning(server, 2) ?? '';
  assert.equal(warning, server.message);
  assert.equal(warning.match(/los/g)?.length, 1, 'the name is named once');
  assert.equal(warning.match(/never stop/g)?.length, 1);
  assert.equal(
    conditionWarning({ ...server, message: '' }, 2),
    'The condition uses los, not defined at line 2: the breakpoint would never stop.',
  );
  assert.match(conditionWarning({ undefinedNames: [], message: '', syntaxError: 'invalid syntax' }, 2) ?? '', /valid/);
  assert.equal(conditionWarning({ undefinedNames: [], message: '', syntaxError: null }, 2), undefined);
  const writes = { undefinedNames: [], message: 'The condition may change the program', syntaxError: null };
  assert.equal(conditionWarning({ ...writes, sideEffects: ['`x.add_(...)` writes in place'] }, 2), writes.message);
  assert.match(
    conditionWarning({ ...writes, message: '', sideEffects: ['`x.add_(...)` writes in place'] }, 2) ?? '',
    /x\.add_/,
  );
  assert.equal(conditionWarning({ ...writes, message: '', sideEffects: [] }, 2), undefined);
});

test('fallback suggestions use the tensorsight builtin on the name', () => {
  const suggestions = fallbackSuggestions('loss');
  assert.ok(suggestions.length >= 4);
  assert.equal(suggestions[0]?.condition, 'tensorsight.nan(loss)');
  for (const s of suggestions) assert.match(s.condition, /^tensorsight\.\w+\(loss[,)]/);
});
