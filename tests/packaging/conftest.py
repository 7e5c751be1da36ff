"""Fixtures of the packaging tier: the wheel, built once per session from a clean copy of the sources, and one user
environment per Python version with that wheel installed (3.11 with torch, 3.12 and 3.13 numpy-only)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from support.user_envs import UserEnvironment, build_wheel, source_hash, user_environment

VERSIONS = ("3.11", "3.12", "3.13")


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    key = source_hash()
    return build_wheel(tmp_path_factory.mktemp("wheel")), key


@pytest.fixture(scope="session", params=VERSIONS, ids=lambda version: f"py{version}")
def user_env(request: pytest.FixtureRequest, wheel: tuple[Path, str]) -> UserEnvironment:
    env = user_environment(request.param, *wheel)
    if isinstance(env, str):
        pytest.skip(env)
    return env


@pytest.fixture(scope="session")
def dev_version_env(wheel: tuple[Path, str]) -> UserEnvironment:
    """The environment of the Python running the tests (always available): for checks that one version suffices."""
    env = user_environment(f"{sys.version_info.major}.{sys.version_info.minor}", *wheel)
    assert not isinstance(env, str), env
    return env


@pytest.fixture()
def torch_env(user_env: UserEnvironment) -> UserEnvironment:
    if not user_env.has_torch:
        pytest.skip(f"Python {user_env.version}: no torch wheel for this version here (numpy-only)")
    return user_env
