"""What an attaching editor hands a running agent (``agent.debugger.attach``) and how the waiting run says where to
attach (``agent.debugger.waiting``): unit tier, no debugger. The real sessions are in test_watch_attach_dap.py."""

from __future__ import annotations

import json

import pytest

from tensorsight.agent.debugger import attach, waiting
from tensorsight.agent.runtime import hub_client
from tensorsight.agent.runtime import options as launch_options
from tensorsight.core import protocol


@pytest.fixture
def fresh_agent_settings(monkeypatch):
    monkeypatch.setattr(launch_options, "_cache", {"breakOnNonFinite": True, "measure": False})
    monkeypatch.setattr(launch_options, "_hub_given", None)
    monkeypatch.setattr(hub_client, "_client", None)
    monkeypatch.setattr(hub_client, "arm", lambda origin="debugger": None)  # no connection from a unit test
    yield


def test_the_editors_options_add_to_what_runs_and_never_turn_a_running_check_off(fresh_agent_settings):
    given = {
        protocol.ENV_OPTIONS: json.dumps({"breakOnNonFinite": False, "viewTensorLink": "vscode://x/viewTensor?s=1"}),
        protocol.ENV_HUB: "127.0.0.1:4000",
        protocol.ENV_TOKEN: "secret",
    }
    assert attach.apply(given)
    assert launch_options.option("breakOnNonFinite") is True  # the watch run's sentinel stays armed
    assert launch_options.option("viewTensorLink") == "vscode://x/viewTensor?s=1"
    assert (launch_options.hub_address(), launch_options.hub_token()) == ("127.0.0.1:4000", "secret")


@pytest.mark.parametrize("given", [["a"], {"TENSORSIGHT_HUB": 5}, "text"])
def test_a_malformed_agent_object_is_ignored(fresh_agent_settings, given):
    assert not attach.apply(given)
    assert launch_options.hub_address() is None


def test_without_a_hub_nothing_is_connected(fresh_agent_settings):
    assert attach.apply({protocol.ENV_SESSION: "s"})
    assert launch_options.hub_address() is None


def test_the_hint_names_the_attach_entry_and_the_tunnel():
    hint = waiting.attach_hint("127.0.0.1", 5679)
    assert '"connect": {"host": "127.0.0.1", "port": 5679}' in hint and "ssh -L 5679:127.0.0.1:5679" in hint


def test_an_unconfigured_process_never_holds():
    waiting._plan = None
    assert not waiting.armed() and waiting.hold("NaN born here: ...") is False
