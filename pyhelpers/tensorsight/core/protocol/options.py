"""The contract's environment and options: what the editor (or the doctor) hands the debuggee and the server.

The environment variables of the debuggee, of the launcher (torchrun) and of the language server; the launch options
inside ``TENSORSIGHT_OPTIONS`` with their kinds and defaults (``LAUNCH_OPTIONS``, read by the agent's ``options`` and
written by the extension and the doctor's ``--set``); the "Debug Training" defaults and the editor's settings'
defaults (``SETTING_DEFAULTS``, which package.json declares too). Re-exported by ``tensorsight.core.protocol``;
pure and stdlib only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# ---------------------------------------------------------------------------------------------- phase verdicts
# The contract owns these two numbers (the agent's verdicts in core.phases, the launch option's default and the
# training panel all read them here); core.phases re-exports them.
# A phase "dominates" when it takes more than this share of the step (the verdict: data > 50%).
DATA_DOMINANT_SHARE = 0.5
# Below this many measured steps a share is noise (first-batch worker start-up, lazy initialisation).
MIN_STEPS_FOR_VERDICT = 3

# ---------------------------------------------------------------------------------------------- environment
ENV_HUB = "TENSORSIGHT_HUB"  # "127.0.0.1:PORT" of the session's hub listener (startSession's answer)
ENV_TOKEN = "TENSORSIGHT_TOKEN"  # the session's secret, sent in the hello
ENV_OPTIONS = "TENSORSIGHT_OPTIONS"  # JSON object of launch options (LAUNCH_OPTIONS)
ENV_SESSION = "TENSORSIGHT_SESSION"  # the editor's session id (set by the extension; informational for the agent)
# the editor's display language (vscode.env.language, e.g. "es"): the words the agent, the CLI tools and the server
# write (core/l10n); the extension sets it for the debuggee, the tools and the server (which prefers the LSP
# initialize request's locale)
ENV_LOCALE = "TENSORSIGHT_LOCALE"
# torchrun's contract, read by the agent to know its rank without importing torch
ENV_RANK = "RANK"
ENV_WORLD_SIZE = "WORLD_SIZE"
ENV_LOCAL_RANK = "LOCAL_RANK"
# the language server's own environment
# os.pathsep-separated folders put first on sys.path by ``python -m tensorsight.server`` started by hand; the extension
# names its bundled libraries to the isolated bootstrap instead (``--path``, see tensorsight/launch.py)
ENV_BUNDLED_LIBS = "TENSORSIGHT_BUNDLED_LIBS"
ENV_LOG_LEVEL = "TENSORSIGHT_LOG_LEVEL"  # the server's stderr logging level, e.g. "INFO"

AGENT_ENVIRONMENT = (ENV_HUB, ENV_TOKEN, ENV_OPTIONS, ENV_SESSION, ENV_LOCALE)
# An attach request (the editor attaching to a process that is already running: ``tensorsight watch``, a process
# started with ``python -m debugpy --listen``) carries the agent's environment under this key instead, an object of
# AGENT_ENVIRONMENT names to strings; debugpy hands the request to pydevd in the process, where the agent reads it
# (``agent.debugger.attach``), so the hub's address and token travel in the debug session, never in a file or argv.
ATTACH_AGENT_KEY = "tensorsightAgent"
LAUNCHER_ENVIRONMENT = (ENV_RANK, ENV_WORLD_SIZE, ENV_LOCAL_RANK)
SERVER_ENVIRONMENT = (ENV_BUNDLED_LIBS, ENV_LOG_LEVEL, ENV_LOCALE)


# ---------------------------------------------------------------------------------------------- launch options
@dataclass(frozen=True)
class LaunchOption:
    """One key of ``TENSORSIGHT_OPTIONS`` (camelCase; the doctor's ``--set KEY=VALUE`` takes the same keys).

    ``kind`` says what the reading feature accepts: ``bool``; ``count`` (a number of steps, 0 = off);
    ``positive`` (a number > 0); ``share`` (between 0 and 1, exclusive); ``path``; ``level`` (a logging level name);
    ``ranks`` (a rank number or a list of them); ``link`` (a URI the editor opens). A wrong value is reported once
    and the default is used.
    """

    name: str
    kind: str
    default: Any
    feature: str  # the module that reads it
    doc: str


LAUNCH_OPTIONS: tuple[LaunchOption, ...] = (
    LaunchOption(
        "breakOnNonFinite",
        "bool",
        False,
        "agent/sentinel",
        "stop in the user's frame at the first NaN/Inf a tensor op produces (the doctor records it instead)",
    ),
    LaunchOption(
        "viewTensorLink",
        "link",
        None,
        "agent/sentinel/view_link",
        "the editor's link to its tensor viewer (scheme://extension/viewTensor?session=…) for the first-NaN stop",
    ),
    LaunchOption("observeShapes", "bool", True, "agent/shapes/observers", "record shapes at assignment lines"),
    LaunchOption("observeShapesEvery", "positive", 500, "agent/shapes/observers", "steps between observation windows"),
    LaunchOption("checkLeakage", "bool", True, "agent/leakage/watch", "look for labels leaking into the features"),
    LaunchOption(
        "leakageBudgetSeconds", "positive", 5.0, "agent/leakage/watch", "seconds the leakage checks may spend per run"
    ),
    LaunchOption("measure", "bool", True, "agent/measurement/pipeline", "master switch of the measurement"),
    LaunchOption("phases", "bool", True, "agent/measurement/pipeline", "time data/forward/backward/optimizer/other"),
    LaunchOption("scalarsEvery", "count", 1, "agent/measurement/pipeline", "loss, lr, grad norms every N steps"),
    LaunchOption(
        "gradNormsPerParameter", "bool", True, "agent/measurement/pipeline", "one gradient norm per parameter too"
    ),
    LaunchOption("histogramEvery", "count", 100, "agent/measurement/pipeline", "weight/grad histograms every N steps"),
    LaunchOption("memory", "bool", True, "agent/measurement/pipeline", "process and CUDA memory per step"),
    LaunchOption("traceMemory", "bool", False, "agent/measurement/pipeline", "start tracemalloc at launch"),
    LaunchOption("logFile", "path", None, "agent/measurement/pipeline", "write a training log to this file"),
    LaunchOption("logLevel", "level", "INFO", "agent/measurement/pipeline", "the training log's level"),
    LaunchOption("tensorboardDir", "path", None, "agent/measurement/pipeline", "write TensorBoard event files here"),
    LaunchOption("diagnoseCurves", "bool", True, "agent/measurement/pipeline", "dynamics findings from the curves"),
    LaunchOption(
        "dataShareThreshold",
        "share",
        DATA_DOMINANT_SHARE,
        "agent/measurement/pipeline",
        "data loading above this share of a step is a performance finding",
    ),
    LaunchOption(
        "ranks",
        "ranks",
        None,
        "agent/distributed/ranks",
        "the ranks that may stop (breakpoints, sentinel); all if unset",
    ),
    LaunchOption("rankHeartbeat", "positive", 5.0, "agent/distributed/ranks", "seconds between rank-state reports"),
    LaunchOption(
        "rankWaitAfter", "positive", 2.0, "agent/distributed/ranks", "seconds in a collective before a rank is waiting"
    ),
)
OPTIONS_BY_NAME: dict[str, LaunchOption] = {o.name: o for o in LAUNCH_OPTIONS}

# The debugpy launch fields a "Debug Training" configuration gets when it leaves them out
# (extension/src/debug/launchConfig.ts; the ``tensorsight.justMyCode`` setting's default is the same). With
# ``justMyCode`` debugpy treats the standard library and site-packages (torch) as library code: Step Into on
# ``model(x)`` lands in the model's ``forward``, not in ``torch/nn/modules/module.py``. TensorSight's own frames are
# hidden either way (``agent.debugger.pause``).
DEBUG_TRAINING_DEFAULTS: dict[str, Any] = {"justMyCode": True, "console": "internalConsole"}

# The editor's ``tensorsight.*`` settings and their defaults: package.json declares each with this default (checked by
# tests/extension_contract/test_setting_defaults.py) and extension/src/common/settings.ts reads it from the generated
# protocol.ts. They are the editor's choices, not the agent's: "Debug Training" stops at the first NaN/Inf
# (``breakOnNonFinite`` here, passed to the agent in every launch), while the agent on its own, without an editor that
# asks, does not (``LAUNCH_OPTIONS``' default; the doctor records instead of stopping).
SETTING_DEFAULTS: dict[str, Any] = {
    "python": "",
    "breakOnNonFinite": True,
    "justMyCode": DEBUG_TRAINING_DEFAULTS["justMyCode"],
    "injectIntoPythonDebugger": True,
    "server.enabled": True,
    "statusBar.gpu": True,
    "tensorboard.logDir": "runs",
    "tensorboard.logRuns": False,
    "doctor.timeout": 600,
    "trace.server": "off",
}


def option_default(name: str) -> Any:
    """The declared default of launch option ``name`` (KeyError for an undeclared one: a typo fails loudly)."""
    return OPTIONS_BY_NAME[name].default


# A run's phase breakdown leaves its first step out once this many later steps are measured (core.phases.PhaseTally;
# the training panel applies the same rule to the ``phases`` events it receives).
PHASE_STEPS_WITHOUT_THE_FIRST = MIN_STEPS_FOR_VERDICT
