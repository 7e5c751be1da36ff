"""The two READMEs stay true: the developers' guide starts with the two commands CI runs, and the user guide that
ships in the .vsix lists every setting the manifest declares, with its default."""

import json
import os
import re

from support.paths import REPO


def _read(*parts: str) -> str:
    with open(os.path.join(REPO, *parts), encoding="utf-8") as handle:
        return handle.read()


def test_the_developers_readme_opens_with_the_two_commands_and_ci_runs_the_test_command():
    readme = _read("README.md")
    first_block = readme[readme.index("```bash") : readme.index("```", readme.index("```bash") + 3)]
    assert "scripts/demo.sh" in first_block and "scripts/test.sh" in first_block
    assert "scripts/test.sh" in _read(".ci", "run")


def test_the_user_guide_lists_every_setting_with_its_default():
    manifest = json.loads(_read("package.json"))
    configuration = manifest["contributes"]["configuration"]
    sections = configuration if isinstance(configuration, list) else [configuration]
    settings = {key: spec.get("default") for section in sections for key, spec in section["properties"].items()}
    guide = _read("extension", "README.md")
    table = {m.group(1): m.group(2) for m in re.finditer(r"^\| `([\w.]+)` \| `([^`]*)` \|", guide, re.M)}
    assert set(table) == set(settings)
    for key, default in settings.items():
        assert json.loads(table[key]) == default, key


def test_the_manifest_packages_the_user_guide():
    assert "--readme-path extension/README.md" in json.loads(_read("package.json"))["scripts"]["package"]
