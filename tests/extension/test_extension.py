"""The JupyterLab extension (extension/): its TypeScript unit tests, its packaging, and a real
browser driving JupyterLab.

These need node (and, for the browser test, Debian's chromium at /usr/bin/chromium and the
extension built by `pip install -e .` with node present). Without them the tests are skipped
with the reason, except in CI (CI=true), where .ci/run installs everything and a missing piece
is a failure.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXTENSION = ROOT / "extension"
NODE_MODULES = EXTENSION / "node_modules"
LABEXTENSION = ROOT / "kernellab" / "labextension"
NOTEBOOK = EXTENSION / "ui-tests" / "vector_add.ipynb"
EXPLORERS = EXTENSION / "ui-tests" / "explorers.ipynb"
ARTIFACTS = ROOT / "test-artifacts" / "extension"
CHROMIUM = os.environ.get("KL_CHROMIUM", "/usr/bin/chromium")
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def require(condition: bool, reason: str) -> None:
    """Skip with `reason` when `condition` is false; in CI, fail instead."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"CI must run this test, but {reason} (.ci/run installs it)")
    pytest.skip(reason)


def node() -> str:
    path = shutil.which("node")
    require(path is not None, "node is not installed")
    return path


def require_node_modules(package: str) -> None:
    require(
        (NODE_MODULES / package / "package.json").exists(),
        f"extension/node_modules/{package} is missing (pip install -e . with node present, "
        "or `jlpm install` in extension/, installs it)",
    )


def require_module(name: str) -> None:
    try:
        __import__(name)
    except ImportError:
        require(False, f"the Python package {name} is not installed (pip install -e '.[test]')")


# -- TypeScript unit tests -----------------------------------------------------------------


def test_typescript_unit_tests():
    """Line mapping, the diff, the highlighting languages, the %%kernel line (vitest)."""
    exe = node()
    require_node_modules("vitest")
    out = subprocess.run(
        [exe, str(NODE_MODULES / "vitest" / "vitest.mjs"), "run", "--reporter=verbose"],
        check=False, cwd=EXTENSION, capture_output=True, text=True, timeout=300,
        env={**os.environ, "NO_COLOR": "1", "FORCE_COLOR": "0"},
    )  # fmt: skip
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-3000:]
    assert " passed" in out.stdout, out.stdout[-3000:]


# -- packaging -----------------------------------------------------------------------------


def test_labextension_is_built_and_enabled():
    """`jupyter labextension list` shows kernellab enabled and OK (pip install -e . built it)."""
    require_module("jupyterlab")
    require((LABEXTENSION / "package.json").exists(), "the extension is not built (node absent?)")
    out = subprocess.run(
        [sys.executable, "-m", "jupyterlab.labextensions", "list"],
        check=False, capture_output=True, text=True, timeout=120,
        env={**os.environ, "NO_COLOR": "1"},
    )  # fmt: skip
    text = out.stdout + out.stderr
    line = next((ln for ln in text.splitlines() if ln.strip().startswith("kernellab ")), None)
    assert line is not None, text
    assert "enabled" in line and "OK" in line and "(python, kernellab)" in line, line
    built = json.loads((LABEXTENSION / "package.json").read_text())
    assert built["name"] == "kernellab"
    assert built["jupyterlab"]["_build"]["load"].startswith("static/remoteEntry.")


def test_python_package_points_jupyter_at_the_extension():
    import kernellab

    (entry,) = kernellab._jupyter_labextension_paths()
    assert entry == {"src": "labextension", "dest": "kernellab"}
    assert Path(kernellab.__file__).parent.joinpath(entry["src"]) == LABEXTENSION


def test_build_output_is_not_committed():
    def ignored(path: str) -> int:
        return subprocess.run(["git", "check-ignore", "-q", path], check=False, cwd=ROOT).returncode

    if ignored("kernellab/labextension/package.json") == 128:
        pytest.skip("not a git checkout")
    for path in (
        "kernellab/labextension/package.json",
        "extension/node_modules/x/package.json",
        "test-artifacts/x.png",
        "extension/lib/index.js",
        "extension/.yarn/cache/x",
    ):
        assert ignored(path) == 0, f"{path} must be ignored by git"  # fmt: skip
    lock = (EXTENSION / "yarn.lock").read_text()
    assert "__metadata:" in lock, "extension/yarn.lock is not a Yarn Berry (jlpm) lockfile"


# -- nbconvert and the browser -------------------------------------------------------------


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    shutil.rmtree(ARTIFACTS, ignore_errors=True)  # no stale screenshots from an earlier run
    root = tmp_path_factory.mktemp("lab")
    shutil.copy(NOTEBOOK, root / NOTEBOOK.name)
    shutil.copy(EXPLORERS, root / EXPLORERS.name)
    return root


@pytest.fixture(scope="module")
def exported_html(workdir) -> Path:
    """The test notebook executed (nbclient) and exported to HTML (nbconvert)."""
    require_module("nbconvert")
    require_module("nbclient")
    require_module("ipykernel")
    import nbformat
    from nbclient import NotebookClient
    from nbconvert import HTMLExporter

    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={
        "metadata": {"path": str(workdir)}}).execute()  # fmt: skip
    html, _ = HTMLExporter().from_notebook_node(nb)
    out = workdir / "vector_add.html"
    out.write_text(html)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shutil.copy(out, ARTIFACTS / out.name)
    return out


def test_nbconvert_html_shows_the_fallback(exported_html):
    """nbconvert skips the custom MIME type and uses the bundle's text/html."""
    html = exported_html.read_text()
    assert 'data-kl-panel="ttir"' in html
    assert "tt.load" in html
    # the JSON payload itself is not rendered (nbconvert has no renderer for it)
    assert '"stages": [' not in html and "&quot;stages&quot;" not in html


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab_server(workdir):
    """JupyterLab on 127.0.0.1, a random port and a random token, serving `workdir`."""
    require_module("jupyterlab")
    require((LABEXTENSION / "package.json").exists(), "the extension is not built (node absent?)")
    port, token = _free_port(), secrets.token_hex(16)
    home = workdir / "home"
    home.mkdir()
    # this checkout's extension first (an installed kernellab may be an older copy)
    share = home / "share"
    (share / "labextensions").mkdir(parents=True)
    (share / "labextensions" / "kernellab").symlink_to(LABEXTENSION, target_is_directory=True)
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "JUPYTER_PATH": os.pathsep.join(filter(None, [str(share), os.environ.get("JUPYTER_PATH")])),
        "IPYTHONDIR": str(home / "ipython"),
        "KERNELLAB_CACHE_DIR": str(home / "kernellab-cache"),
        # the kernels import this checkout's kernellab, whatever is installed
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        # as on a fresh machine without Graphviz: the graphs must draw without `dot`
        "PATH": path_without("dot", path, home / "bin"),
    }
    cmd = [
        sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root",
        "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={workdir}",
        "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        f"--LabApp.workspaces_dir={home / 'workspaces'}",
        f"--LabApp.user_settings_dir={home / 'settings'}",
    ]  # fmt: skip
    # no news/update prompts over the notebook: the browser test clicks through the page
    settings = home / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    settings.joinpath("notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    log_path = workdir / "jupyterlab.log"
    with open(log_path, "w") as log:
        yield from _serve(cmd, env, log, log_path, port, token)


def path_without(program: str, path: str, shadows: Path) -> str:
    """`path` with `program` hidden: each directory holding it is replaced by a directory of
    links to everything else in it."""
    dirs = []
    for i, entry in enumerate(filter(None, path.split(os.pathsep))):
        folder = Path(entry)
        if not (folder / program).exists():
            dirs.append(entry)
            continue
        shadow = shadows / str(i)
        shadow.mkdir(parents=True, exist_ok=True)
        for item in folder.iterdir():
            if item.name != program and not (shadow / item.name).exists():
                (shadow / item.name).symlink_to(item)
        dirs.append(str(shadow))
    return os.pathsep.join(dirs)


def _serve(cmd, env, log, log_path: Path, port: int, token: str):
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                log.flush()
                pytest.fail("JupyterLab did not start:\n" + log_path.read_text()[-4000:])
            time.sleep(0.3)
        yield url, token
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.flush()
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shutil.copy(log_path, ARTIFACTS / "jupyterlab.log")


def test_viewer_in_a_real_browser(lab_server, exported_html):
    """Chromium opens the notebook in JupyterLab, runs the %%kernel cell, and checks the viewer
    (stages, line linking, pass diff, copy/download, resources, timings), the %%kernel cell and
    Markdown fence highlighting, and the nbconvert export's fallback. Screenshots go to
    test-artifacts/extension/."""
    exe = node()
    require_node_modules("playwright-core")
    require(Path(CHROMIUM).exists(), f"{CHROMIUM} is missing (apt-get install chromium)")
    url, token = lab_server
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "KL_LAB_URL": url, "KL_TOKEN": token, "KL_NOTEBOOK": NOTEBOOK.name,
        "KL_ARTIFACTS": str(ARTIFACTS), "KL_EXPORTED_HTML": str(exported_html),
        "KL_CHROMIUM": CHROMIUM, "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1",
    }  # fmt: skip
    out = subprocess.run(
        [exe, str(EXTENSION / "ui-tests" / "viewer.test.mjs")],
        check=False, cwd=EXTENSION, env=env, capture_output=True, text=True, timeout=420,
    )  # fmt: skip
    report = out.stdout + out.stderr
    (ARTIFACTS / "browser-test.log").write_text(report)
    assert out.returncode == 0, report[-8000:]
    assert "not ok" not in out.stdout
    assert (ARTIFACTS / "kernel-viewer.png").stat().st_size > 10_000


def test_saved_explorers_viewer_and_graphs_in_a_real_browser(lab_server):
    """Chromium runs explorers.ipynb: the live explorer, kl.lab.show of a CompiledKernel with its
    source lines linked, a dataflow graph drawn with `dot` hidden from PATH; then saves the
    notebook, restarts its kernel and reopens it: the explorer shows its static snapshot, and
    in the dark theme the picture is inverted. Screenshots go to test-artifacts/extension/."""
    exe = node()
    require_node_modules("playwright-core")
    require(Path(CHROMIUM).exists(), f"{CHROMIUM} is missing (apt-get install chromium)")
    url, token = lab_server
    env = {
        **os.environ,
        "KL_LAB_URL": url, "KL_TOKEN": token, "KL_NOTEBOOK": EXPLORERS.name,
        "KL_ARTIFACTS": str(ARTIFACTS), "KL_CHROMIUM": CHROMIUM, "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1",
    }  # fmt: skip
    out = subprocess.run(
        [exe, str(EXTENSION / "ui-tests" / "explorers.test.mjs")],
        check=False, cwd=EXTENSION, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    report = out.stdout + out.stderr
    (ARTIFACTS / "explorers-browser-test.log").write_text(report)
    assert out.returncode == 0, report[-8000:]
    assert "not ok" not in out.stdout
    assert (ARTIFACTS / "explorer-snapshot-reopened.png").stat().st_size > 5_000
