/**
 * "Add Tensor Breakpoint…": offers conditions for the expression under the cursor (from the language server's
 * `tensorsight/suggestConditions`, or a built-in list when it is not running), lets the user type their own, checks
 * it with `tensorsight/validateCondition` (a name undefined at that line makes a breakpoint that never fires, since
 * debugpy swallows the NameError), and sets a standard conditional breakpoint on the cursor line.
 */
import type { LanguageServer } from '../server/languageServer';
import { Methods, type SuggestConditionsParams, type ValidateConditionParams } from '../server/protocol';
import { debug, l10n, Location, type QuickPickItem, SourceBreakpoint, window } from '../common/vscodeapi';
import { conditionWarning, expressionAt, fallbackSuggestions, readSuggestions, readValidation } from './conditions';

interface ConditionItem extends QuickPickItem {
  condition?: string;
}

export async function addTensorBreakpoint(server: LanguageServer): Promise<void> {
  const editor = window.activeTextEditor();
  if (!editor || editor.document.languageId !== 'python') {
    void window.showInformationMessage(l10n.t('Open a Python file and place the cursor on a tensor.'));
    return;
  }
  const position = editor.selection.active;
  const lineText = editor.document.lineAt(position.line).text;
  const uri = editor.document.uri;
  const picked = expressionAt(lineText, position.character);
  // The server answers [] when the name is a module, a function or a class (no value to test).
  const suggestions = picked
    ? (readSuggestions(
        await server.request<unknown>(Methods.suggestConditions, {
          name: picked,
          uri: uri.toString(),
          line: position.line,
        } satisfies SuggestConditionsParams),
      ) ?? fallbackSuggestions(picked))
    : [];
  const name = suggestions.length > 0 ? picked : undefined;
  const typeOwn: ConditionItem = { label: l10n.t('$(edit) Type a condition…'), alwaysShow: true };
  const items: ConditionItem[] = [
    ...suggestions.map((s) => ({ label: s.label, description: s.description, condition: s.condition })),
    typeOwn,
  ];
  const choice = await window.showQuickPick(items, {
    title: name ? l10n.t('Tensor breakpoint on {0}', name) : l10n.t('Tensor breakpoint'),
    placeHolder:
      picked && !name
        ? l10n.t(
            '{0} is a module, a function or a method, not a value: type a condition on line {1}.',
            picked,
            position.line + 1,
          )
        : l10n.t('Stop on line {0} when…', position.line + 1),
  });
  if (!choice) return;
  let condition = choice.condition;
  if (condition === undefined) {
    condition = await window.showInputBox({
      title: l10n.t('Tensor breakpoint'),
      prompt: l10n.t('A Python expression evaluated in the frame; `tensorsight` helpers are available.'),
      value: name ? `tensorsight.nan(${name})` : '',
    });
    if (!condition?.trim()) return;
    condition = condition.trim();
  }

  const check = readValidation(
    await server.request<unknown>(Methods.validateCondition, {
      uri: editor.document.uri.toString(),
      line: position.line,
      condition,
    } satisfies ValidateConditionParams),
  );
  const warning = check ? conditionWarning(check, position.line + 1) : undefined;
  if (warning) {
    const addAnyway = l10n.t('Add Anyway');
    if ((await window.showWarningMessage(warning, addAnyway)) !== addAnyway) return;
  }

  const existing = debug
    .breakpoints()
    .filter(
      (bp): bp is InstanceType<typeof SourceBreakpoint> =>
        bp instanceof SourceBreakpoint &&
        bp.location.uri.toString() === uri.toString() &&
        bp.location.range.start.line === position.line,
    );
  if (existing.length > 0) debug.removeBreakpoints(existing);
  const lineStart = editor.document.lineAt(position.line).range.start;
  debug.addBreakpoints([new SourceBreakpoint(new Location(uri, lineStart), true, condition)]);
  window.setStatusBarMessage(l10n.t('Tensor breakpoint set: {0}', condition), 4000);
}
