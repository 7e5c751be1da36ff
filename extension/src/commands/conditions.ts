/**
 * Pure helpers of "Add Tensor Breakpoint…": the expression under the cursor, and the conditions offered for it when
 * the language server cannot suggest any (they use the `tensorsight` builtin every debugged process has).
 */
import type { ConditionSuggestion } from '../server/protocol';

const IDENTIFIER_CHAR = /[A-Za-z0-9_.]/;
const WORD_CHAR = /[A-Za-z0-9_]/;
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/;

/**
 * The dotted name under the cursor, up to the end of the word the cursor is in: `model.fc1.weight` on "weight",
 * `loss` on "loss" in `loss.backward()`. Undefined on keywords, numbers and punctuation.
 */
export function expressionAt(lineText: string, character: number): string | undefined {
  let start = Math.min(character, lineText.length);
  let end = start;
  while (start > 0 && IDENTIFIER_CHAR.test(lineText.charAt(start - 1))) start--;
  while (end < lineText.length && WORD_CHAR.test(lineText.charAt(end))) end++;
  const text = lineText.slice(start, end).replace(/^\.+|\.+$/g, '');
  return IDENTIFIER.test(text) && !PYTHON_KEYWORDS.has(text) ? text : undefined;
}

export function fallbackSuggestions(name: string): ConditionSuggestion[] {
  return [
    { label: `tensorsight.nan(${name})`, condition: `tensorsight.nan(${name})`, description: 'NaN' },
    { label: `tensorsight.inf(${name})`, condition: `tensorsight.inf(${name})`, description: '+Inf / -Inf' },
    { label: `tensorsight.nonfinite(${name})`, condition: `tensorsight.nonfinite(${name})`, description: 'NaN / Inf' },
    { label: `tensorsight.spike(${name}, 3)`, condition: `tensorsight.spike(${name}, 3)`, description: '3σ' },
    {
      label: `tensorsight.grad_norm(${name}) > 1e3`,
      condition: `tensorsight.grad_norm(${name}) > 1e3`,
      description: '‖grad‖',
    },
  ];
}

const PYTHON_KEYWORDS = new Set([
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
