"""The real language server over stdio in Spanish: initialized with the editor's locale (what vscode-languageclient
sends from vscode.env.language), its diagnostics, quick-fix titles and code lenses are Spanish; with the locale only in
its environment (TENSORSIGHT_LOCALE, as the extension also sets it) too; without either they stay English. The
condition checks of "Add Tensor Breakpoint…" (validateCondition, suggestConditions) follow the same language, and so
do a run's code lens (its phases in the training panel's words) and the Problems source and code of the rule's, the
doctor's and the run's findings ("TensorSight (regla + doctor + ejecución)", "dinámica")."""

from __future__ import annotations

import os

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities

from support.lsp import close, doctor_under_hub, eventually, initialize, open_and_wait, server_config
from support.paths import REPO, example
from tensorsight.core import protocol

pytestmark = pytest.mark.asyncio(loop_scope="module")

NEVER_CLEARED = os.path.join(REPO, "tests", "fixtures", "rules", "ts101_gradients_never_cleared.py")
SPANISH_TS101 = "suma en .grad y nada en este bucle lo pone a cero"
SPANISH_LENS = "TensorSight · bucle de entrenamiento — ejecútelo con «Depurar entrenamiento»"


async def initialize_in(client: LanguageClient, locale: str | None) -> None:
    await client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            initialization_options={"trusted": True},
            locale=locale,
        )
    )


@pytest_lsp.fixture(config=server_config(), scope="module")
async def spanish_client(lsp_client: LanguageClient):
    await initialize_in(lsp_client, "es")
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=server_config(extra_env={protocol.ENV_LOCALE: "es-ES"}), scope="module")
async def environment_client(lsp_client: LanguageClient):
    await initialize(lsp_client)  # no locale in initialize: the environment decides
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=server_config(), scope="module")
async def english_client(lsp_client: LanguageClient):
    await initialize_in(lsp_client, "en")
    yield
    await lsp_client.shutdown_session()


async def lens_titles(client: LanguageClient, uri: str) -> list[str]:
    lenses = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    return [lens.command.title for lens in lenses or [] if lens.command is not None]


async def test_initialized_in_spanish_the_diagnostics_fixes_and_code_lenses_are_spanish(spanish_client: LanguageClient):
    uri = await open_and_wait(spanish_client, NEVER_CLEARED)
    (diagnostic,) = spanish_client.diagnostics[uri]
    assert str(diagnostic.code) == "TS101"
    assert (
        SPANISH_TS101 in diagnostic.message
        and "llame a optimizer.zero_grad() justo antes de backward()" in diagnostic.message
    )
    actions = await spanish_client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=diagnostic.range,
            context=types.CodeActionContext(diagnostics=[diagnostic]),
        )
    )
    titles = [action.title for action in actions or []]
    assert "Poner a cero los gradientes antes de backward(): optimizer.zero_grad() (TS101)" in titles
    (lens,) = await lens_titles(spanish_client, uri)
    assert lens.startswith(SPANISH_LENS), lens
    # a tensor breakpoint's condition that names an undefined variable is explained in Spanish too
    result = await spanish_client.protocol.send_request_async(
        "tensorsight/validateCondition", {"uri": uri, "line": 0, "condition": "tensorsight.nan(lose)"}
    )
    assert "`lose` no está definido en la línea 1" in result.message, result.message
    assert "debugpy trataría la condición como falsa y nunca se detendría" in result.message
    suggestions = await spanish_client.protocol.send_request_async(
        "tensorsight/suggestConditions", {"name": "loss", "uri": uri, "line": 0}
    )
    assert "parar cuando pase a NaN o Inf" in [s["description"] for s in suggestions]
    close(spanish_client, uri)


async def test_the_environment_alone_makes_the_server_spanish(environment_client: LanguageClient):
    uri = await open_and_wait(environment_client, NEVER_CLEARED)
    (diagnostic,) = environment_client.diagnostics[uri]
    assert SPANISH_TS101 in diagnostic.message
    close(environment_client, uri)


async def test_an_english_editor_gets_the_english_messages(english_client: LanguageClient):
    uri = await open_and_wait(english_client, NEVER_CLEARED)
    (diagnostic,) = english_client.diagnostics[uri]
    assert "adds into .grad and nothing in this loop clears it" in diagnostic.message
    titles = await lens_titles(english_client, uri)
    assert titles and titles[0].startswith("TensorSight · training loop — run it with Debug Training")
    close(english_client, uri)


RETAINED_GRAPH = example("retained_graph.py")  # `total_loss += loss`: TS104 statically, a `memory` finding when it runs
SPANISH_PHASES = ("carga de datos", "propagación", "retropropagación", "optimizador", "otros")  # the panel's legend


def line_of(path: str, start: str) -> int:
    """0-based line of the first line of ``path`` that starts (after its indentation) with ``start``."""
    return next(n for n, text in enumerate(open(path).read().split("\n")) if text.strip().startswith(start))


@pytest.mark.timeout(400)
async def test_a_spanish_run_s_code_lens_and_problems_sources_are_spanish(spanish_client: LanguageClient):
    accumulation, loop = line_of(RETAINED_GRAPH, "total_loss +="), line_of(RETAINED_GRAPH, "for ")
    uri = await open_and_wait(spanish_client, RETAINED_GRAPH)
    await doctor_under_hub(spanish_client, "es-run", RETAINED_GRAPH, {"measure": True})

    def sources() -> list[str | None]:
        return [d.source for d in spanish_client.diagnostics.get(uri, []) if d.range.start.line == accumulation]

    await eventually(lambda: sources() == ["TensorSight (regla + ejecución)"], what="the run merged with the rule")
    lenses = await spanish_client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    (title,) = [lens.command.title for lens in lenses or [] if lens.command and lens.range.start.line == loop]
    assert "ms/paso" in title and all(f"{phase} " in title for phase in SPANISH_PHASES), title
    words = set(title.replace("·", " ").split())
    assert not words & {"data", "forward", "backward", "optimizer", "other", "ms/step"}, title

    # the doctor's report joins the same problem; a kind of finding no rule has shows its kind in Spanish
    file = RETAINED_GRAPH
    findings = [
        {"kind": "memory", "severity": "warning", "message": "m", "file": file, "line": accumulation + 1},
        {"kind": "dynamics", "severity": "warning", "message": "d", "file": file, "line": loop + 1},
    ]
    await spanish_client.protocol.send_request_async(
        "tensorsight/toolFindings", {"tool": "doctor", "findings": findings}
    )
    await eventually(lambda: sources() == ["TensorSight (regla + doctor + ejecución)"], what="the doctor's report")
    (curve,) = [d for d in spanish_client.diagnostics[uri] if d.range.start.line == loop]
    assert (curve.source, str(curve.code)) == ("TensorSight (doctor)", "dinámica")
    await spanish_client.protocol.send_request_async("tensorsight/toolFindings", {"tool": "doctor", "findings": []})
    await spanish_client.protocol.send_request_async("tensorsight/endSession", {"sessionId": "es-run"})
    close(spanish_client, uri)
