"""Build function for hatch-jupyter-builder: the JupyterLab extension, when node is present.

pyproject.toml names `extension.hatch_build.build` as the jupyter-builder hook's build
function. It builds `extension/` into `kernellab/labextension/` (which the wheel ships as
share/jupyter/labextensions/kernellab) with jlpm, and:

- skips, with a warning, when `node` is not on PATH: the Python package then installs and
  works without its JupyterLab extension (the text/html fallback still renders every kernel);
- skips when the build output is newer than every input (src/, style/, package.json,
  yarn.lock, tsconfig.json), so repeated `pip install -e .` calls cost nothing;
- fails loudly when node is present but the build fails or leaves no output.

`SKIP_JUPYTER_BUILDER=1` skips the hook entirely (hatch-jupyter-builder reads it).
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

log = logging.getLogger("kernellab.extension")

ROOT = Path(__file__).resolve().parent.parent
EXTENSION = ROOT / "extension"
OUTPUT = ROOT / "kernellab" / "labextension"
TARGETS = [OUTPUT / "package.json", OUTPUT / "static" / "style.js", OUTPUT / "install.json"]
# the extension bundles the behaviour script the static HTML inlines (kernellab/lab/viewer)
INPUTS = ["src", "style", "package.json", "yarn.lock", "tsconfig.json", ".yarnrc.yml",
          "../kernellab/lab/viewer/behaviour.js"]  # fmt: skip
MODE = OUTPUT / ".build-mode"  # "prod" (minified, for wheels) or "dev" (source maps)


def _newest(path: Path) -> float:
    if path.is_file():
        return path.stat().st_mtime
    newest = 0.0
    for dirpath, _, files in os.walk(path):
        for name in files:
            newest = max(newest, os.stat(os.path.join(dirpath, name)).st_mtime)
    return newest


def _oldest_target() -> float | None:
    try:
        return min(t.stat().st_mtime for t in TARGETS)
    except FileNotFoundError:
        return None


def is_stale(mode: str = "dev") -> bool:
    """Whether the extension needs building; a wheel ("prod") needs a production build."""
    built = _oldest_target()
    if built is None:
        return True
    if mode == "prod" and (not MODE.exists() or MODE.read_text().strip() != "prod"):
        return True
    return any(_newest(EXTENSION / name) > built for name in INPUTS if (EXTENSION / name).exists())


def build(target_name: str, version: str, **kwargs) -> None:
    """hatch-jupyter-builder build function (`version` is "standard" or "editable")."""
    from hatch_jupyter_builder import npm_builder

    prebuilt = _oldest_target() is not None
    if shutil.which("node") is None:
        message = (
            "node was not found on PATH: kernellab is built without its JupyterLab extension "
            "(the compiled-kernel viewer falls back to static HTML). Install Node.js >= 20 and "
            "reinstall to get it, or set SKIP_JUPYTER_BUILDER=1 to skip this step quietly."
        )
        if prebuilt:
            message = "node was not found on PATH: shipping the extension built earlier."
        log.warning(message)
        print(f"kernellab: {message}", flush=True)
        return
    mode = "dev" if version == "editable" else "prod"
    if not is_stale(mode) and not os.environ.get("KERNELLAB_FORCE_EXTENSION_BUILD"):
        log.info("kernellab: the JupyterLab extension is up to date")
        return
    build_cmd = "install:extension" if mode == "dev" else "build:prod"
    npm_builder(target_name, version, path=str(EXTENSION), build_cmd=build_cmd, npm=["jlpm"])
    if OUTPUT.is_dir():
        # install.json tells `jupyter labextension list` that pip manages this extension
        shutil.copyfile(EXTENSION / "install.json", OUTPUT / "install.json")
    missing = [str(t.relative_to(ROOT)) for t in TARGETS if not t.exists()]
    if missing:
        raise RuntimeError(f"building the JupyterLab extension left no {', '.join(missing)}")
    MODE.write_text(mode + "\n")
