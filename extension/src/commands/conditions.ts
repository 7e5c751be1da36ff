/**
 * Pure helpers of "Add Tensor Breakpoint…": the expression under the cursor, the conditions offered for it when the
 * language server cannot suggest any (they use the `tensorsight` builtin every debugged process has), and the
 * warning for a condition that would never stop; the server's answers read with the contract's parser.
 */
import { l10n } from '../common/vscodeapi';
import { type ConditionSuggestion, parsePayload, type ValidateConditionResult } from '../server/protocol';

/**
 * The server's `suggestConditions` answer: the suggestions the contract accepts (a malformed one is left out), or
 * undefined when there was no answer (no server) or it is not a list, so the caller offers its built-in list.
 */
export function readSuggestions(answer: unknown): ConditionSuggestion[] | undefined {
  if (!Array.isArray(answer)) return undefined;
  return answer.flatMap((item) => {
    const parsed = parsePayload('ConditionSuggestion', item);
    return parsed.ok ? [parsed.value] : [];
  });
}

/** The server's `validateCondition` answer, or undefined without one (or with one the contract refuses). */
export function readValidation(answer: unknown): ValidateConditionResult | undefined {
  const parsed = parsePayload('ValidateConditionResult', answer);
  return parsed.ok ? parsed.value : undefined;
}

const IDENTIFIER_CHAR = /[A-Za-z0-9_.]/;
const WORD_CHAR = /[A-Za-z0-9_]/;
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/;

/**
 * The value a condition can test at the cursor: the dotted name up to the end of the word the cursor is in
 * (`model.fc1.weight` on "weight", `loss` on "loss" in `loss.backward()`), except that a method the line calls is
 * never a value, so on "backward" in `loss.backward()` it is the receiver `loss`. Undefined on keywords, numbers,
 * punctuation and an attribute of an expression that is no dotted name (`backward` in `loss.mean().backward()`). A
 * plain called name (`model(x)`, `print(x)`) is kept: only the source tells a module from a function, and the
 * language server's `suggestConditions` (core `condition_target`) decides.
 */
export function expressionAt(lineText: string, character: number): string | undefined {
  let start = Math.min(character, lineText.length);
  let end = start;
  while (start > 0 && IDENTIFIER_CHAR.test(lineText.charAt(start - 1))) start--;
  while (end < lineText.length && WORD_CHAR.test(lineText.charAt(end))) end++;
  // `.backward` of `loss.mean().backward()`, `.grad` of `x[0].grad`: an attribute of a call's or a subscript's
  // result, no name a condition can test (the bare attribute would name the method, or nothing at all)
  if (lineText.charAt(start) === '.') return undefined;
  let text = lineText.slice(start, end).replace(/\.+$/g, '');
  const called = /^\s*\(/.test(lineText.slice(end));
  if (called && text.includes('.')) text = text.slice(0, text.lastIndexOf('.'));
  return IDENTIFIER.test(text) && !PYTHON_KEYWORDS.has(text) ? text : undefined;
}

/**
 * The one warning for a condition that would make a breakpoint that never stops, or that would change the program
 * each time it runs (an in-place method, `out=`, `:=`, I/O, a call not known to be harmless: the server's
 * `sideEffects`), or undefined when it is fine. The server's sentence already names every undefined name, unknown
 * helper, syntax error and side effect, so it is shown alone: adding ours in front of it said the same thing twice.
 */
export function conditionWarning(
  check: Pick<ValidateConditionResult, 'undefinedNames' | 'message' | 'syntaxError'> &
    Partial<Pick<ValidateConditionResult, 'sideEffects'>>,
  line: number,
): string | undefined {
  const sideEffects = check.sideEffects ?? [];
  if (check.undefinedNames.length === 0 && !check.syntaxError && sideEffects.length === 0) return undefined;
  if (check.message) return check.message;
  if (check.undefinedNames.length === 0 && !check.syntaxError) {
    return l10n.t('The condition may change the program each time the line runs ({0}).', sideEffects.join('; '));
  }
  return check.syntaxError
    ? l10n.t(
        'The condition is not a valid Python expression ({0}): the breakpoint would never stop.',
        check.syntaxError,
      )
    : l10n.t(
        'The condition uses {0}, not defined at line {1}: the breakpoint would never stop.',
        check.undefinedNames.join(', '),
        line,
      );
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
