"""Static checks of breakpoint conditions: names undefined at the line, unknown helpers, syntax, and suggestions."""

import textwrap

import pytest

from tensorsight.core.conditions import (
    PREDICATES,
    check_condition,
    condition_target,
    guess_kind,
    suggest_conditions,
    undefined_names,
    validate_condition,
)

TRAIN = textwrap.dedent(
    """\
    import torch
    from torch import nn

    LIMIT = 3.0
    model = nn.Linear(4, 2)                       # 5
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


    def train(data, epochs=1):                    # 9
        total = 0.0
        for epoch in range(epochs):               # 11
            for x, y in data:                     # 12
                out = model(x)                    # 13
                loss = ((out - y) ** 2).mean()    # 14
                loss.backward()                   # 15
                with torch.no_grad() as ctx:      # 16
                    total += loss.item()          # 17
        summary = total / epochs                  # 18
        return summary                            # 19


    def outer(scale):                             # 22
        unused = 2
        def inner(t):                             # 24
            return t * scale                      # 25
        return inner


    class Trainer:                                # 29
        rate = 0.1                                # 30
        steps = 10                                # 31

        def step(self, batch):                    # 33
            return batch * self.rate              # 34


    result = train([], 1)                         # 37
    """
)


def names(line, condition, source=TRAIN):
    return undefined_names(source, line, condition)


def test_parameters_and_earlier_locals_are_defined():
    assert names(13, "tensorsight.nan(x) or epoch > 1 or data is None or total > 0") == []


def test_a_local_assigned_later_in_straight_line_code_is_undefined():
    assert names(10, "tensorsight.nan(loss)") == ["loss"]
    assert names(18, "summary > 0") == ["summary"]
    assert names(19, "summary > 0") == []


def test_a_name_assigned_later_in_the_same_loop_exists_from_the_second_iteration():
    # line 13 runs before line 14 binds `loss` in the first iteration; later iterations see it
    assert names(13, "tensorsight.nan(loss)") == []


def test_the_assignment_on_the_breakpoint_line_has_not_happened_yet():
    assert names(5, "model is None") == ["model"]
    assert names(6, "model is None") == []


def test_loop_target_and_with_target_are_defined_inside_their_bodies():
    assert names(17, "ctx is None and y is not None") == []
    assert names(11, "epoch") == ["epoch"]  # the `for` line runs before the first binding


def test_module_names_are_visible_in_functions_wherever_they_are_bound():
    assert names(13, "tensorsight.grad_norm(model) > LIMIT and result is None") == []


def test_closure_sees_only_the_enclosing_names_it_uses():
    assert names(25, "scale > 1") == []
    assert names(25, "unused > 1") == ["unused"]


def test_class_body_names_are_not_visible_in_methods():
    assert names(34, "rate > 0") == ["rate"]
    assert names(31, "rate > 0") == []
    assert names(34, "self.rate > 0 and batch is not None") == []


def test_builtins_and_the_tensorsight_builtin_are_always_defined():
    assert names(13, "len(data) > 0 and isinstance(x, object) and tensorsight.step() > 2 and __name__") == []


def test_names_bound_inside_the_condition_are_not_reported():
    condition = "any(tensorsight.nan(p) for p in model.parameters()) or (lambda v: v)(1) or (k := 2) > 1"
    assert names(13, condition) == []


def test_unknown_tensorsight_helpers_are_reported():
    assert names(13, "tensorsight.nann(loss)") == ["tensorsight.nann"]
    assert names(13, "tensorsight.nan(loss)") == []


def test_every_documented_predicate_is_a_known_helper():
    for predicate in PREDICATES:
        assert names(13, f"tensorsight.{predicate.name}") == [], predicate.name


def test_syntax_error_is_reported_not_raised():
    check = check_condition(TRAIN, 13, "loss >")
    assert check.syntax_error
    assert not check.ok
    result = validate_condition(TRAIN, 13, "loss >")
    assert result["syntaxError"] and "not a valid Python expression" in result["message"]


def test_validate_condition_answer_for_the_language_server():
    result = validate_condition(TRAIN, 10, "tensorsight.nan(loss) and LIMIT > 1")
    assert result["undefinedNames"] == ["loss"]
    assert "`loss` is not defined at line 10" in result["message"]
    assert "never stop" in result["message"]
    assert validate_condition(TRAIN, 15, "tensorsight.nan(loss)") == {
        "undefinedNames": [],
        "message": "",
        "syntaxError": None,
        "sideEffects": [],
    }


def test_star_import_disables_the_name_check():
    source = "from torch import *\nx = 1\n"
    check = check_condition(source, 2, "tensor(y)")
    assert check.undefined == () and check.notes


def test_a_file_that_does_not_parse_falls_back_to_the_words_it_contains():
    source = "loss = compute(\nprint(loss)\n"  # mid-edit: unbalanced parenthesis
    assert names(2, "loss > 1", source) == []
    assert names(2, "missing > 1", source) == ["missing"]


def test_walrus_conditional_and_except_bindings_count():
    source = textwrap.dedent(
        """\
        def f(items):
            if items:
                first = items[0]
            try:
                pass
            except ValueError as err:
                print(err)
            if (n := len(items)) > 2:
                pass
            return first
        """
    )
    assert names(10, "first and n", source) == []
    assert names(7, "err", source) == []
    assert names(10, "err", source) == ["err"]  # Python deletes the name when the handler ends


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("loss", "scalar"),
        ("val_loss", "scalar"),
        ("model", "module"),
        ("self.encoder", "module"),
        ("model.fc1", "module"),
        ("optimizer", "optimizer"),
        ("model.fc1.weight", "tensor"),
        ("logits", "tensor"),
        ("x", "tensor"),
    ],
)
def test_guess_kind_from_the_name(name, kind):
    assert guess_kind(name) == kind


def test_suggestions_for_a_loss_start_with_nonfinite_and_spike():
    suggestions = suggest_conditions("loss")
    conditions = [s["condition"] for s in suggestions]
    assert conditions[:2] == ["tensorsight.nonfinite(loss)", "tensorsight.spike(loss, 3)"]
    assert all(set(s) == {"label", "condition", "description"} for s in suggestions)
    assert all(s["description"] for s in suggestions)


def test_suggestions_for_a_module_offer_gradient_conditions():
    conditions = [s["condition"] for s in suggest_conditions("model")]
    assert "tensorsight.grad_norm(model) > 1e3" in conditions
    assert "tensorsight.grad_missing(model)" in conditions


def test_observed_shape_prefills_shape_is_with_a_free_batch_dimension():
    conditions = [s["condition"] for s in suggest_conditions("logits", kind_hint="tensor", shape=[64, 10])]
    assert "not tensorsight.shape_is(logits, (None, 10))" in conditions


def test_kind_hint_beats_the_name():
    conditions = [s["condition"] for s in suggest_conditions("x", kind_hint="module")]
    assert "tensorsight.grad_norm(x) > 1e3" in conditions


def test_every_suggestion_is_a_valid_condition_using_known_helpers():
    source = "import torch\nmodel = optimizer = loss = logits = x = None\nprint()\n"
    for name in ("loss", "model", "optimizer", "logits", "x"):
        for suggestion in suggest_conditions(name, shape=[8, 3]):
            assert validate_condition(source, 3, suggestion["condition"])["undefinedNames"] == [], suggestion


CURSOR = textwrap.dedent(
    """\
    import torch
    import torch.nn.functional as F
    from torch.nn.functional import relu


    def evaluate(net, batch):
        return net(batch)


    model = torch.nn.Linear(4, 2)
    for xb, yb in loader:
        out = model(xb)
        loss = F.cross_entropy(out, yb)
        loss.backward()
        hidden = relu(out[0])
        print(loss.item(), model.weight.grad)
    """
)


@pytest.mark.parametrize(
    ("line", "under_cursor", "target"),
    [
        (14, "loss.backward", "loss"),  # a method called on the line: its receiver
        (14, "loss", "loss"),
        (16, "loss.item", "loss"),
        (16, "model.weight.grad", "model.weight.grad"),  # an attribute chain that is not called
        (15, "out[0]", "out[0]"),  # a subscript
        (12, "model", "model"),  # a variable the line calls (an nn.Module) is still a value
        (7, "net", "net"),  # a parameter called as a function: still a value
        (13, "F.cross_entropy", None),  # a function of a module
        (13, "F", None),  # a module
        (1, "torch", None),
        (15, "relu", None),  # a function imported by name and called
        (16, "print", None),  # a builtin function
        (6, "evaluate", None),  # a function defined in the file
        (16, "loss.item()", None),  # a call is never a value: the condition would run the user's code
        (15, "out[model(xb)]", None),
    ],
)
def test_condition_target_is_a_value_never_a_method_module_or_function(line, under_cursor, target):
    assert condition_target(CURSOR, line, under_cursor) == target


def test_condition_target_reads_the_line_when_the_file_does_not_parse():
    broken = "loss = compute(\nloss.backward()\n"
    assert condition_target(broken, 2, "loss.backward") == "loss"
    assert condition_target(broken, 2, "loss") == "loss"
