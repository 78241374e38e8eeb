"""kl.testing's plotting side: perf_report figures, the roofline, the ratio to torch, progress,
and do_bench's device choice. Runs on the interpreter; matplotlib draws on Agg."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import kernellab as kl
import kernellab.language as tl
from kernellab import testing

pytest.importorskip("matplotlib")


@kl.jit
def _add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(
        out_ptr + offs,
        tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask),
        mask=mask,
    )


def _vector_add_report(ylabel="GB/s", lines=("kernellab", "torch")):
    checked = []

    @testing.perf_report(
        testing.Benchmark(
            x_names=["size"], x_vals=[256, 1024], x_log=True, line_arg="provider",
            line_vals=list(lines), line_names=[n.capitalize() if n != "torch" else "torch" for n in lines],
            styles=[("tab:blue", "-"), ("tab:green", "--")], ylabel=ylabel, plot_name="vector-add",
            args={"dtype": np.float32},
        )
    )  # fmt: skip
    def bench(size, provider, dtype):
        rng = np.random.default_rng()
        x, y = rng.standard_normal(size).astype(dtype), rng.standard_normal(size).astype(dtype)
        out = np.full(size, np.nan, dtype)
        if provider == "kernellab":
            fn = lambda: _add[(kl.cdiv(size, 256),)](x, y, out, size, BLOCK=256)
        else:  # the reference line (numpy standing in for torch, which this machine may lack)
            fn = lambda: np.add(x, y, out=out)
        ms, low, high = testing.do_bench(fn, warmup=1, rep=3, quantiles=[0.5, 0.2, 0.8])
        np.testing.assert_allclose(out, x + y, rtol=1e-6)
        checked.append((size, provider))
        gbps = lambda t: 3 * x.nbytes / (t * 1e-3) / 1e9
        return gbps(ms), gbps(high), gbps(low)

    return bench, checked


def test_perf_report_plots_a_figure_with_roofline_and_ratio(capsys):
    from matplotlib.figure import Figure

    bench, checked = _vector_add_report()
    bench.run(show_plots=True, print_data=True, progress=False)
    assert checked == [(256, "kernellab"), (256, "torch"), (1024, "kernellab"), (1024, "torch")]
    (fig,) = bench.figures
    assert isinstance(fig, Figure)
    ax, ratio_ax = fig.axes
    labels = [line.get_label() for line in ax.get_lines()]
    assert labels[:2] == ["Kernellab", "torch"]
    assert labels[2].startswith("copy bandwidth") and labels[2].endswith("GB/s")  # the roofline
    roof = ax.get_lines()[2].get_ydata()[0]
    assert roof == pytest.approx(testing.copy_bandwidth()) and roof > 0
    assert ax.get_xscale() == "log" and ax.get_ylabel() == "GB/s"
    # the table has the ratio column, equal to the ratio of the two lines
    _, header, rows = bench.tables[0]
    assert header == ["size", "Kernellab", "torch", "Kernellab/torch"]
    for row in rows:
        assert row[3] == pytest.approx(row[1] / row[2])
    ratio_line = ratio_ax.get_lines()[0]
    np.testing.assert_allclose(ratio_line.get_ydata(), [r[3] for r in rows])
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "vector-add:" and out[1].split() == header


def test_no_roofline_or_ratio_without_gbps_or_torch(tmp_path):
    bench, _ = _vector_add_report(ylabel="ms", lines=("kernellab", "numpy"))
    bench.run(show_plots=False, save_path=str(tmp_path), progress=False)
    (fig,) = bench.figures  # a save_path plots too, as in Triton
    assert len(fig.axes) == 1 and len(fig.axes[0].get_lines()) == 2
    assert (tmp_path / "vector-add.png").read_bytes().startswith(b"\x89PNG")
    assert (tmp_path / "vector-add.csv").read_text().splitlines()[0] == "size,Kernellab,Numpy"


def test_progress_is_shown_for_a_sweep(capsys):
    bench, _ = _vector_add_report(ylabel="ms")
    bench.run(print_data=False, progress=True)
    err = capsys.readouterr().err
    assert (
        "[0/4] vector-add: size=256, provider=kernellab" in err and "[4/4] vector-add: done" in err
    )


def test_do_bench_device_choice():
    calls = []
    ms = testing.do_bench(
        lambda: calls.append(1), warmup=0, rep=1, device="cpu", return_mode="median"
    )
    assert ms >= 0 and calls
    with pytest.raises(ValueError, match="device"):
        testing.do_bench(lambda: None, device="tpu")
    assert not testing.timing.cuda_in_use() or "torch" in sys.modules


def test_plotting_stays_lazy():
    code = (
        "import sys, kernellab as kl\n"
        "b = kl.testing.perf_report(kl.testing.Benchmark(['n'], [1], 'p', ['a'], ['A'], 'x'))(lambda n, p: 1.0)\n"
        "b.run(print_data=True, progress=False)\n"
        "print('matplotlib' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines()[-1] == "False"


def _figure_from_pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure()
    fig.add_subplot().set_title("demo")
    return plt, fig


def test_show_figure_sends_a_png_in_a_notebook_and_closes_the_figure(monkeypatch):
    pytest.importorskip("IPython")
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda obj, raw=False: shown.append((obj, raw)))
    monkeypatch.setattr(testing.progress, "in_notebook", lambda: True)
    plt, fig = _figure_from_pyplot()
    testing.plots.show_figure(fig)
    ((data, raw),) = shown
    assert (
        raw and data["image/png"].startswith(b"\x89PNG") and data["text/plain"] == "<figure demo>"
    )
    assert not plt.fignum_exists(fig.number)  # the inline backend won't draw it a second time


def test_show_figure_shows_nothing_in_a_terminal(monkeypatch):
    pytest.importorskip("IPython")
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda *a, **k: shown.append(a))
    monkeypatch.setattr(testing.progress, "in_notebook", lambda: False)
    plt, fig = _figure_from_pyplot()
    testing.plots.show_figure(fig)
    assert shown == [] and plt.fignum_exists(fig.number)
    plt.close(fig)


def test_notebook_means_an_ipython_kernel(monkeypatch):
    IPython = pytest.importorskip("IPython")
    from types import SimpleNamespace

    for shell, expected in [
        (None, False),  # plain python
        (SimpleNamespace(), False),  # a terminal IPython: no kernel
        (SimpleNamespace(kernel=object()), True),  # Jupyter, VS Code, Colab
    ]:
        monkeypatch.setattr(IPython, "get_ipython", lambda shell=shell: shell)
        assert testing.progress.in_notebook() is expected
