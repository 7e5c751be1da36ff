"""Where each kind of autograd node outside modules is made in the user's code: the op sites the outside-modules mode
has seen, learned while it observes a step, so that a birth found later in the autograd graph of a step it did not
observe (``graph_search``) can still be named at its line.

The outside-modules mode (``outside``) observes the first steps of every run and then as many as its cost budget
allows. Each op it sees with an autograd node is a site: the user's file, line and code object, the op's name, and the
node it makes (its type and the types of the nodes it consumes). A step the mode leaves alone runs the same lines,
making the same kinds of nodes; when its loss turns out non-finite, the graph search finds the node that made the
NaN/Inf and asks here which line makes such a node.

Learning costs one dictionary look-up per observed op once a site is known. Called by ``outside`` (``learn``) and
``graph_search`` (``sites_for``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from tensorsight.agent.runtime.user_code import is_user_file

MAX_SITES = 4096  # distinct (code, line, op) sites remembered; past that new ones are not learned


@dataclass(frozen=True)
class Site:
    """One line of the user's code and the node an op there makes."""

    file: str
    line: int
    function: str
    code: Any  # the code object whose frame ran the op (to find that frame again on the stack)
    op: str
    node: str  # the node's type name, e.g. "LogBackward0"
    producers: tuple[str, ...]  # the type names of the nodes it consumes ("" for an input with no node)
    caller: tuple[Any, int] | None  # (code, line) of the user's call into ``code``'s function, when it was one


_seen: dict[tuple[Any, int, Any], Site] = {}
_by_node: dict[str, list[Site]] = {}


def learn(func: Any, op: str, node: Any, frame: Any) -> None:
    """Remember that ``frame``'s current line ran ``func`` (read as ``op``), which made ``node``."""
    code = frame.f_code
    key = (code, frame.f_lineno, func)
    if key in _seen or len(_seen) >= MAX_SITES:
        return
    site = Site(
        os.path.abspath(code.co_filename),
        frame.f_lineno,
        code.co_name,
        code,
        op,
        type(node).__name__,
        producers_of(node),
        _caller(frame),
    )
    _seen[key] = site
    _by_node.setdefault(site.node, []).append(site)


def _caller(frame: Any) -> tuple[Any, int] | None:
    caller = frame.f_back
    if caller is None or not is_user_file(caller.f_code.co_filename):
        return None
    return caller.f_code, caller.f_lineno


def producers_of(node: Any) -> tuple[str, ...]:
    """The type names of the nodes ``node`` consumes, in input order ("" for an input that has none)."""
    try:
        return tuple(type(next_node).__name__ if next_node is not None else "" for next_node, _ in node.next_functions)
    except (AttributeError, RuntimeError):
        return ()


def sites_for(node: Any) -> list[Site]:
    """The sites known to make a node like ``node``: those whose consumed node types match it, else every site of
    its type (several lines can make the same kind of node; callers then name them all)."""
    candidates = _by_node.get(type(node).__name__, [])
    if len(candidates) <= 1:
        return list(candidates)
    shape = producers_of(node)
    matching = [site for site in candidates if site.producers == shape]
    return matching or list(candidates)


def forget() -> None:
    """Drop what was learned (tests)."""
    _seen.clear()
    _by_node.clear()
