/**
 * "Add Tensor Breakpoint…": offers conditions for the expression under the cursor (from the language server's
 * `tensorsight/suggestConditions`, or a built-in list when it is not running), lets the user type their own, checks
 * it with `tensorsight/validateCondition` (a name undefined at that line makes a breakpoint that never fires, since
 * debugpy swallows the NameError), and sets a standard conditional breakpoint on the cursor line.
 */
import type { LanguageServer } from '../server/languageServer';
import { type ConditionSuggestion, Methods, type ValidateConditionResult } from '../server/protocol';
import { debug, l10n, Location, type QuickPickItem, SourceBreakpoint, window } from '../common/vscodeapi';
import { expressionAt, fallbackSuggestions } from './conditions';

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
  const name = expressionAt(lineText, position.character);

  const suggestions = name
    ? ((await server.request<ConditionSuggestion[]>(Methods.suggestConditions, { name })) ?? fallbackSuggestions(name))
    : [];
  const typeOwn: ConditionItem = { label: l10n.t('$(edit) Type a condition…'), alwaysShow: true };
  const items: ConditionItem[] = [
    ...suggestions.map((s) => ({ label: s.label, description: s.description, condition: s.condition })),
    typeOwn,
  ];
  const picked = await window.showQuickPick(items, {
    title: name ? l10n.t('Tensor breakpoint on {0}', name) : l10n.t('Tensor breakpoint'),
    placeHolder: l10n.t('Stop on line {0} when…', position.line + 1),
  });
  if (!picked) return;
  let condition = picked.condition;
  if (condition === undefined) {
    condition = await window.showInputBox({
      title: l10n.t('Tensor breakpoint'),
      prompt: l10n.t('A Python expression evaluated in the frame; `tensorsight` helpers are available.'),
      value: name ? `tensorsight.nan(${name})` : '',
    });
    if (!condition?.trim()) return;
    condition = condition.trim();
  }

  const check = await server.request<ValidateConditionResult>(Methods.validateCondition, {
    uri: editor.document.uri.toString(),
    line: position.line,
    condition,
  });
  if (check && check.undefinedNames.length > 0) {
    const addAnyway = l10n.t('Add Anyway');
    const choice = await window.showWarningMessage(
      l10n.t(
        'The condition uses {0}, not defined at line {1}: the breakpoint would never stop. {2}',
        check.undefinedNames.join(', '),
        position.line + 1,
        check.message,
      ),
      addAnyway,
    );
    if (choice !== addAnyway) return;
  }

  const uri = editor.document.uri;
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
