"""The contract between the processes (``tensorsight.core.protocol``) against every side's source.

- every event type the agent's source emits (``emit("...")``, ``emit_finding``; found by walking the AST, so a new
  call site is checked the day it is written) is declared, with the keys it sends, by the module that sends it, and
  nothing declared is never sent;
- the language server forwards exactly the declared ``forwarded`` types and its runtime view handles exactly the
  declared ``view`` types; every type reaches the editor one way or the other;
- every launch option a feature reads is declared, and read without a default of its own (the contract's is the
  one); every editor setting's default in package.json and settings.ts is the contract's;
- no module outside the contract spells an environment variable's name;
- ``extension/src/server/protocol.ts`` is what ``scripts/generate_protocol_ts.py`` makes of the contract.
The live server's answers are checked against the same contract in ``tests/server/test_protocol_answers.py``.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import pathlib
import re
import subprocess
import sys
from collections.abc import Iterator

import pytest

from support import run_event_samples
from support.paths import PYHELPERS
from tensorsight.core import json_lines, protocol
from tensorsight.server import runtime_view

PACKAGE = pathlib.Path(PYHELPERS, "tensorsight")
ROOT = PACKAGE.parent.parent
# the processes that send events: the agent, and the doctor (which runs the agent headless)
SENDERS = (PACKAGE / "agent", PACKAGE / "cli")
HUB_CLIENT_EVENTS = {protocol.HELLO, protocol.DROPPED, protocol.BYE}  # written on the wire, not through the bus


def python_files(*folders: pathlib.Path) -> Iterator[pathlib.Path]:
    for folder in folders:
        yield from sorted(folder.rglob("*.py"))


def module_label(path: pathlib.Path) -> str:
    """``agent/measurement/timer`` for pyhelpers/tensorsight/agent/measurement/timer.py (a package: its folder)."""
    relative = path.relative_to(PACKAGE).with_suffix("")
    return str(relative.parent if relative.name == "__init__" else relative).replace("\\", "/")


def _call_name(node: ast.Call) -> str | None:
    return node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)


def _is_typed_type(node: ast.expr) -> bool:
    """``event.TYPE``: ``events.send`` handing a typed event on to ``emit`` (its call site is the one scanned)."""
    return isinstance(node, ast.Attribute) and node.attr == "TYPE"


def event_builders() -> dict[str, type[protocol.AgentEvent]]:
    """Functions of the senders annotated to return an event dataclass (``def event(self) -> protocol.XEvent``)."""
    found: dict[str, type[protocol.AgentEvent]] = {}
    for path in python_files(*SENDERS):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and isinstance(node.returns, ast.Attribute):
                payload = getattr(protocol, node.returns.attr, None)
                if isinstance(payload, type) and issubclass(payload, protocol.AgentEvent):
                    found[node.name] = payload
    return found


def emit_sites() -> list[tuple[str, str, set[str] | None]]:
    """(event type, module, literal keyword names or None when ``**data`` is passed) of every emit call: the typed
    ``send(protocol.XEvent(...))`` (the type is the dataclass's ``TYPE``) and the loose ``emit("type", ...)``."""
    sites = []
    builders = event_builders()
    for path in python_files(*SENDERS):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name = _call_name(node)
            if name == "send" and node.args and isinstance(node.args[0], ast.Call):
                built = node.args[0]
                payload = getattr(protocol, _call_name(built) or "", None)
                if payload is None and _call_name(built) in builders:  # send(record.event()): typed by its builder
                    payload = builders[_call_name(built) or ""]
                    sites.append((payload.TYPE, module_label(path), None))
                    continue
                assert isinstance(payload, type) and issubclass(payload, protocol.AgentEvent), (
                    f"{path.name}:{node.lineno}: send() takes a core.protocol event dataclass, built in the call or "
                    "returned by a function annotated with it"
                )
                keywords = {k.arg for k in built.keywords}
                literal = None if None in keywords else {k for k in keywords if k is not None}
                sites.append((payload.TYPE, module_label(path), literal))
            elif name == "emit_finding":
                sites.append(("finding", module_label(path), None))
            elif name == "emit" and node.args and not _is_typed_type(node.args[0]):
                first = node.args[0]
                assert isinstance(first, ast.Constant) and isinstance(first.value, str), (
                    f"{path.name}:{node.lineno}: emit() with a computed event type cannot be checked; use a literal"
                )
                keywords = {k.arg for k in node.keywords}
                literal = None if None in keywords else {k for k in keywords if k is not None}
                sites.append((first.value, module_label(path), literal))
    return sites


def test_the_scan_finds_the_agents_emit_calls():
    sites = emit_sites()
    # a scan that silently found nothing would pass every test below
    assert len(sites) >= 20
    assert ("timer", "agent/measurement/timer", {"name", "seconds", "file", "line"}) in sites


def test_the_agent_builds_every_event_from_its_dataclass():
    """``events.send(protocol.XEvent(...))``, never ``emit("x", key=...)``: a renamed field fails type checking."""
    loose = []
    for path in python_files(*SENDERS):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and _call_name(node) == "emit" and node.args:
                if isinstance(node.args[0], ast.Constant):
                    loose.append(f"{module_label(path)}:{node.lineno}")
    assert not loose, f"events emitted by name with loose keys: {loose}"


def test_every_emitted_event_type_is_declared_by_the_module_that_emits_it():
    for event_type, module, _ in emit_sites():
        assert event_type in protocol.EVENT_TYPES, f"{module} emits {event_type!r}, which core/protocol/ lacks"
        declared = protocol.EVENTS_BY_NAME[event_type].source.split(" ")[0]
        senders = {m for t, m, _ in emit_sites() if t == event_type}
        assert declared in senders, f"{event_type!r} is declared as sent by {declared}, but sent by {senders}"


def test_every_declared_event_type_is_emitted():
    emitted = {event_type for event_type, _, _ in emit_sites()} | HUB_CLIENT_EVENTS
    assert protocol.EVENT_TYPES == emitted, f"declared but never sent: {sorted(protocol.EVENT_TYPES - emitted)}"


def test_literal_event_keys_are_declared():
    for event_type, module, keys in emit_sites():
        if keys is None:
            continue
        undeclared = keys - set(protocol.all_keys(event_type)) - {"rank"}
        assert not undeclared, f"{module} sends {event_type!r} with undeclared keys {sorted(undeclared)}"
        missing = set(protocol.required_keys(event_type)) - keys
        assert not missing, f"{module} sends {event_type!r} without its required keys {sorted(missing)}"


def test_the_event_counts_the_issue_named():
    # 16 types through the bus plus the hub client's three: the drift issue 11 found was 9 / 15 / 12 of these
    assert len(protocol.EVENT_TYPES - HUB_CLIENT_EVENTS) == 16
    assert "timer" in protocol.FORWARDED_EVENT_TYPES and "timer" in protocol.VIEW_EVENT_TYPES


def test_the_runtime_view_handles_exactly_the_declared_view_events():
    assert runtime_view.HANDLED_EVENT_TYPES == protocol.VIEW_EVENT_TYPES


def test_every_event_reaches_the_editor():
    for event in protocol.EVENTS:
        assert event.forwarded or event.view, f"{event.name!r} would be dropped by the server"
    # the one type not forwarded is shown as inlay hints (too many per step for the notification channel)
    assert protocol.EVENT_TYPES - protocol.FORWARDED_EVENT_TYPES == {"shape"}


def test_the_server_forwards_what_the_contract_says():
    """server.py must route by the contract's set, never by a set of its own (the old drift)."""
    tree = ast.parse((PACKAGE / "server" / "server.py").read_text(encoding="utf-8"))
    names = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    assert "FORWARDED_EVENT_TYPES" in names
    for node in ast.walk(tree):
        if isinstance(node, (ast.Set, ast.List, ast.Tuple)):
            strings = {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
            assert len(strings & protocol.EVENT_TYPES) < 3, "server.py lists event types itself"


# ---------------------------------------------------------------------------------------------- typed events
SAMPLES = (*run_event_samples.SAMPLES, *run_event_samples.NOT_FORWARDED)


def test_every_event_type_has_a_sample_and_the_fixture_is_current():
    assert {s.TYPE for s in SAMPLES} == protocol.EVENT_TYPES | protocol.RUN_EVENT_TYPES
    assert {s.TYPE for s in run_event_samples.SAMPLES} == protocol.RUN_EVENT_TYPES
    with open(run_event_samples.FIXTURE, encoding="utf-8") as fixture:
        assert fixture.read() == run_event_samples.render(), "rewrite it: python tests/support/run_event_samples.py"


@pytest.mark.parametrize("sample", SAMPLES, ids=[f"{s.TYPE}-{i}" for i, s in enumerate(SAMPLES)])
def test_what_the_agent_builds_crosses_the_hub_and_parses_unchanged(sample):
    """send(): the dataclass's wire dict, coded by the hub's codec, read back by the server's parse_event."""
    line = json_lines.encode(protocol.wire_event(sample))
    received, problem = json_lines.decode(line.strip())
    assert received is not None, problem
    registry = {**protocol.EVENTS_BY_NAME, **protocol.RUN_EVENTS}
    parsed = protocol.parse_event(received, registry)
    assert isinstance(parsed, type(sample)), parsed
    assert protocol.json_safe(protocol.wire_event(parsed)) == protocol.json_safe(protocol.wire_event(sample))


def test_a_malformed_event_is_refused_with_the_field_that_is_wrong():
    timer = protocol.wire_event(protocol.TimerEvent(name="data", seconds=0.5))
    assert isinstance(protocol.parse_event(timer), protocol.TimerEvent)
    cases = {
        "'seconds' must be a number": {**timer, "seconds": "fast"},
        "'name' is missing": {k: v for k, v in timer.items() if k != "name"},
        "'line' must be an integer or null": {**timer, "line": True},
        "'values[0].text' must be a string": {
            **protocol.wire_event(run_event_samples.NOT_FORWARDED[0]),
            "values": [{"name": "x", "text": 3}],
        },
        "unknown event type 'nope'": {"type": "nope"},
        "event without a type": {"seconds": 1.0},
    }
    for reason, message in cases.items():
        error = protocol.parse_event(message)
        assert isinstance(error, protocol.ProtocolError) and reason in str(error), (reason, error)
    # keys the contract does not declare are a newer agent's: ignored, not refused
    assert isinstance(protocol.parse_event({**timer, "newKey": [1]}), protocol.TimerEvent)


def test_request_params_are_dataclasses_read_with_the_same_rules():
    """Each custom request's params and answer is a dataclass; the generated interfaces are derived from them."""
    assert all(interface.payload is not None for interface in protocol.INTERFACES)
    given = protocol.parse_payload(
        protocol.ValidateConditionParams, {"uri": "file:///t.py", "line": 3, "condition": "x"}
    )
    assert given == protocol.ValidateConditionParams(uri="file:///t.py", line=3, condition="x")
    wrong = protocol.parse_payload(protocol.ValidateConditionParams, {"uri": "u", "line": "3", "condition": "x"})
    assert isinstance(wrong, protocol.ProtocolError) and "'line' must be an integer" in str(wrong)
    severity = protocol.parse_payload(
        protocol.ReportedFinding, {"kind": "k", "severity": "fatal", "message": "m", "file": "f", "line": 1}
    )
    assert isinstance(severity, protocol.ProtocolError) and "'severity' must be one of" in str(severity)
    [severity_field] = [f for f in protocol.INTERFACES_BY_NAME["ReportedFinding"].fields if f.name == "severity"]
    assert severity_field.ts_type == "'error' | 'warning' | 'info'"


def _event_name_lists_in_python(path: pathlib.Path) -> list[tuple[int, list[str]]]:
    names = protocol.EVENT_TYPES | protocol.RUN_EVENT_TYPES
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        items: list[ast.expr | None] = []
        if isinstance(node, (ast.Set, ast.List, ast.Tuple)):
            items = list(node.elts)
        elif isinstance(node, ast.Dict):
            items = list(node.keys)
        literal = [i.value for i in items if isinstance(i, ast.Constant) and i.value in names]
        # a dict whose keys are mostly event names routes by name (a status dict's "dropped" key does not)
        if len(literal) >= 2 and (not isinstance(node, ast.Dict) or 2 * len(literal) > len(items)):
            found.append((node.lineno, literal))
    return found


# an array, a Set or an object of two or more quoted event names, e.g. ['hello', 'bye'] or new Set(['scalars', ...
_TS_NAME = "'(?:" + "|".join(re.escape(n) for n in sorted(protocol.EVENT_TYPES | protocol.RUN_EVENT_TYPES)) + ")'"
_TS_NAME_LIST = re.compile(rf"[\[{{(]\s*{_TS_NAME}\s*[,:][^\]}})]*?{_TS_NAME}", re.S)


def test_no_list_of_event_names_is_kept_outside_the_contract():
    """The server and the extension take event names from the contract (its registry, its dataclasses, the generated
    union): a set like ``{"finding", "nonfinite", ...}`` in the server or ``['hello', 'bye']`` in the extension would
    drift from it. Only core/protocol/ and the generated protocol.ts may list them."""
    offenders = [
        f"{path.relative_to(ROOT)}:{line}: {names}"
        for path in python_files(PACKAGE / "server")
        for line, names in _event_name_lists_in_python(path)
    ]
    for path in sorted((ROOT / "extension" / "src").rglob("*.ts")):
        if path.name == "protocol.ts" and path.parent.name == "server":
            continue
        for match in _TS_NAME_LIST.finditer(path.read_text(encoding="utf-8")):
            offenders.append(f"{path.relative_to(ROOT)}: {match.group(0)[:80]!r}")
    assert not offenders, "event names listed outside core/protocol/:\n" + "\n".join(offenders)


def test_the_name_list_scan_sees_a_list_in_either_language(tmp_path):
    module = tmp_path / "batcher.py"
    module.write_text(
        'KEPT = frozenset({"finding", "nonfinite", "x"})\nONE = ("hello",)\n'
        'ROUTES = {"hello": 1, "bye": 2}\nSTATUS = {"dropped": 0, "ranks": [], "events": 1, "sessionId": "s"}\n',
        encoding="utf-8",
    )
    found = [names for _, names in _event_name_lists_in_python(module)]
    assert sorted(found) == [["finding", "nonfinite"], ["hello", "bye"]]
    assert _TS_NAME_LIST.search("const LIFECYCLE = new Set(['hello', 'bye']);")
    assert _TS_NAME_LIST.search("const kept = { finding: 2, 'rank-state': 2 }") is None  # bare keys: not a name list
    assert not _TS_NAME_LIST.search("switch (event.type) {\n  case 'scalars': {\n    break;\n  }\n  case 'bye':")


# ---------------------------------------------------------------------------------------------- launch options
OPTION_READERS = {"option", "_bool", "_count", "_path", "_share", "_seconds_option"}


def option_reads() -> list[tuple[str, str, ast.expr | None, dict[str, object]]]:
    """(option name, module, default expression or None, the module's constants) of every literal option read."""
    reads = []
    for path in python_files(PACKAGE / "agent"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        constants: dict[str, object] = {}
        for node in tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                if isinstance(node.value, ast.Constant):
                    constants[node.targets[0].id] = node.value.value
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in OPTION_READERS):
                continue
            if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                default = node.args[1] if len(node.args) > 1 else None
                reads.append((node.args[0].value, module_label(path), default, constants))
    return reads


def test_every_option_a_feature_reads_is_declared_and_its_default_comes_only_from_the_contract():
    reads = option_reads()
    assert {name for name, *_ in reads} >= {"breakOnNonFinite", "observeShapes", "measure", "ranks", "checkLeakage"}
    for name, module, default, _constants in reads:
        assert name in protocol.OPTIONS_BY_NAME, f"{module} reads launch option {name!r}, which is not declared"
        written = ast.unparse(default) if default is not None else ""
        assert default is None, (
            f"{module} reads {name!r} with a default of its own ({written}): leave it to the contract"
        )


def test_the_option_scan_sees_a_default_written_where_an_option_is_read(tmp_path, monkeypatch):
    feature = tmp_path / "agent" / "feature.py"
    feature.parent.mkdir()
    feature.write_text('EVERY = 500\nevery = option("observeShapesEvery", EVERY)\n', encoding="utf-8")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path)
    [(name, _module, default, _constants)] = option_reads()
    assert name == "observeShapesEvery" and isinstance(default, ast.Name)


def test_each_setting_in_package_json_has_the_contracts_default_and_so_do_its_launch_templates():
    manifest = json.loads((ROOT / "package.json").read_text(encoding="utf-8"))
    properties = manifest["contributes"]["configuration"]["properties"]
    declared = {key.removeprefix("tensorsight."): value["default"] for key, value in properties.items()}
    assert declared == protocol.SETTING_DEFAULTS
    [debugger] = manifest["contributes"]["debuggers"]
    attribute = debugger["configurationAttributes"]["launch"]["properties"]["breakOnNonFinite"]
    templates = [*debugger["initialConfigurations"], *(s["body"] for s in debugger["configurationSnippets"])]
    for default in (attribute["default"], *(t["breakOnNonFinite"] for t in templates)):
        assert default is protocol.SETTING_DEFAULTS["breakOnNonFinite"]
    settings_ts = (ROOT / "extension" / "src" / "common" / "settings.ts").read_text(encoding="utf-8")
    assert re.findall(r"config\.get<\w+>\('[\w.]+', (?!SETTING_DEFAULTS)", settings_ts) == [], "a literal default"


def test_every_declared_option_is_read_by_its_feature():
    read = {(name, module) for name, module, *_ in option_reads()}
    for option in protocol.LAUNCH_OPTIONS:
        assert (option.name, option.feature) in read, f"{option.name!r} is declared but {option.feature} never reads it"


def test_an_undeclared_option_name_fails_loudly():
    from tensorsight.agent.runtime.options import option

    with pytest.raises(KeyError):
        option("breakOnNonFinit")  # a typo must not read as "unset"


def test_the_doctors_options_are_declared_and_a_mistyped_set_is_refused():
    from tensorsight.cli.doctor import DOCTOR_OPTIONS
    from tensorsight.cli.prelude import parse_overrides

    assert set(DOCTOR_OPTIONS) <= set(protocol.OPTIONS_BY_NAME)
    assert parse_overrides(["histogramEvery=40", "logFile=run.log"]) == {"histogramEvery": 40, "logFile": "run.log"}
    with pytest.raises(ValueError, match="did you mean histogramEvery"):
        parse_overrides(["histogramEvry=40"])


# ---------------------------------------------------------------------------------------------- environment
def test_environment_names_are_spelt_only_in_the_contract():
    names = {*protocol.AGENT_ENVIRONMENT, *protocol.SERVER_ENVIRONMENT, *protocol.LAUNCHER_ENVIRONMENT}
    for path in python_files(PACKAGE / "agent", PACKAGE / "server", PACKAGE / "cli"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "get" and node.args:
                first = node.args[0]
                if isinstance(first, ast.Constant) and first.value in names - set(protocol.LAUNCHER_ENVIRONMENT):
                    pytest.fail(f"{module_label(path)}:{node.lineno} reads {first.value} by its literal name")


# ---------------------------------------------------------------------------------------------- TypeScript
def _generator():
    spec = importlib.util.spec_from_file_location("generate_protocol_ts", ROOT / "scripts" / "generate_protocol_ts.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_protocol_ts_is_generated_from_the_contract():
    generator = _generator()
    committed = (ROOT / "extension" / "src" / "server" / "protocol.ts").read_text(encoding="utf-8")
    assert committed == generator.render(), "protocol.ts is stale: run scripts/generate_protocol_ts.py"


def test_protocol_ts_carries_every_method_field_and_event_type():
    text = _generator().render()
    for request in protocol.REQUESTS:
        assert f"{request.key}: '{request.method}'" in text
    for interface in protocol.INTERFACES:
        assert f"export interface {interface.name} {{" in text
    result = text.split("export interface ValidateConditionResult {")[1].split("}")[0]
    for field in ("undefinedNames", "message", "syntaxError", "available"):  # the two the old file lacked
        assert f"  {field}:" in result
    for event_type in protocol.FORWARDED_EVENT_TYPES | {"ranks"}:
        assert f"  '{event_type}'," in text
    assert "  'shape'," not in text


def test_every_interface_a_request_or_notification_names_exists():
    for name in [r.params for r in protocol.REQUESTS] + [r.result.removesuffix("[]") for r in protocol.REQUESTS]:
        assert name in protocol.INTERFACES_BY_NAME
    for notification in protocol.NOTIFICATIONS:
        assert notification.params in protocol.INTERFACES_BY_NAME


def test_the_contract_imports_nothing_but_the_stdlib_and_core():
    """The agent imports the contract inside the user's process: it must pull in no torch, numpy, pygls or server."""
    code = (
        "import sys, tensorsight.core.protocol\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'numpy', 'pygls', 'lsprotocol')\n"
        "             or m.startswith(('tensorsight.server', 'tensorsight.agent', 'tensorsight.cli')))\n"
        "print(','.join(bad))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": PYHELPERS}, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""
