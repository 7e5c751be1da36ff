"""``tensorsight/validateCondition`` and ``tensorsight/suggestConditions``: help with breakpoint conditions.

The extension asks ``validateCondition`` before it sets a conditional breakpoint (debugpy treats a condition that
raises as false, so a misspelt name is a breakpoint that never stops) and ``suggestConditions`` for the quick pick of
"Add Tensor Breakpoint…". ``server`` registers both; the answers come from the pure ``core.conditions``, given the
document's text (for suggestions: which value the cursor's expression stands for) and, for suggestions, the shape a
run observed for that name at that line.
"""

from __future__ import annotations

from typing import Any

from pygls.exceptions import JsonRpcInvalidParams

from tensorsight.core import conditions
from tensorsight.core.protocol import SuggestConditionsParams, ValidateConditionParams, json_safe
from tensorsight.server.params import non_empty, parse_params
from tensorsight.server.runtime_view import RuntimeView


def validate_condition(params: Any, source_of: Any) -> dict[str, Any]:
    """``{undefinedNames, message, syntaxError, available}`` for the condition at the 0-based ``line`` of ``uri``;
    ``source_of(uri)`` gives the document's text (the open buffer, else the file)."""
    given = parse_params(ValidateConditionParams, params)
    uri, condition = non_empty(given.uri, "uri"), non_empty(given.condition, "condition")
    if given.line < 0:
        raise JsonRpcInvalidParams("'line' must be a 0-based line number")
    answer = conditions.validate_condition(source_of(uri), given.line + 1, condition)
    return {**json_safe(answer), "available": True}


def suggest_conditions(params: Any, view: RuntimeView, path_of: Any, source_of: Any = None) -> list[Any]:
    """``[{label, condition, description}]`` for ``name``. With ``uri`` and 0-based ``line``: the conditions are about
    the value ``core.conditions.condition_target`` finds there (``loss`` for ``loss.backward``; none, so ``[]``, for a
    module or a function), and the shape a run observed for it (when no ``shape`` is given) pre-fills the shape
    condition; ``source_of(uri)`` gives the document's text."""
    given = parse_params(SuggestConditionsParams, params)
    name, kind_hint, shape = non_empty(given.name, "name"), given.kindHint, given.shape
    uri, line = given.uri, given.line
    if source_of is not None and uri is not None and line is not None:
        target = conditions.condition_target(source_of(uri), line + 1, name)
        if target is None:
            return []
        name = target
    if shape is None and uri is not None and line is not None and (path := path_of(uri)):
        seen = [s for s in view.inlay_hints(path) if s.line == line + 1 and s.name == name]
        if seen and seen[-1].shape is not None:
            shape = list(seen[-1].shape)
    return list(json_safe(conditions.suggest_conditions(name, kind_hint, shape)))
