"""README.md promises two commands; CI must run the test one exactly as written."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def readme_commands() -> list[str]:
    """The indented one-line commands under the "Two commands" heading."""
    section = ROOT.joinpath("README.md").read_text().split("## Two commands", 1)[1].split("\n## ", 1)[0]
    return [line.strip() for line in section.splitlines() if line.startswith("    ")]


def test_readme_has_exactly_two_single_line_commands():
    commands = readme_commands()
    assert len(commands) == 2
    assert re.search(r"pip install -e '\.\[lab\]' && .*jupyter lab notebooks/?$", commands[0])
    assert re.search(r"pip install -e '\.\[test\]' && .*python -m pytest", commands[1])


def test_ci_runs_the_readme_test_command_verbatim():
    ci = ROOT.joinpath(".ci", "run").read_text()
    assert ci.startswith("#!/usr/bin/env bash")
    assert "set -euo pipefail" in ci
    assert readme_commands()[1] in ci.splitlines()
