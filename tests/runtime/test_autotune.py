"""@kl.autotune, kl.Config and @kl.heuristics: selection, caching, output safety, pruning."""

import numpy as np
import pytest

import kernellab as kl
import kernellab.language as tl

CONFIGS = [kl.Config({"BLOCK": 32}), kl.Config({"BLOCK": 64}, num_warps=2)]


def accumulate_kernel():
    """out += x: a kernel whose timing runs would corrupt its output if left unguarded."""

    @kl.jit
    def accumulate(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        acc = tl.load(out_ptr + offs, mask=mask) + tl.load(x_ptr + offs, mask=mask)
        tl.store(out_ptr + offs, acc, mask=mask)

    return accumulate


def grid(meta):
    return (kl.cdiv(meta["n"], meta["BLOCK"]),)


def inputs(n):
    rng = np.random.default_rng()
    return rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)


@pytest.mark.parametrize("guard", ["restore_value", "reset_to_zero"])
def test_tuning_leaves_outputs_as_one_launch_would(guard):
    kernel = kl.autotune(CONFIGS, key=["n"], **{guard: ["out_ptr"]})(accumulate_kernel())
    n = 200
    x, out = inputs(n)
    before = out.copy()
    kernel[grid](x, out, n)
    np.testing.assert_allclose(out, before.astype(np.float64) + x, rtol=1e-6)
    assert kernel.best_config in CONFIGS
    assert set(kernel.configs_timings) == set(CONFIGS)


def test_best_config_is_cached_per_key():
    kernel = kl.autotune(CONFIGS, key=["n"], restore_value=["out_ptr"])(accumulate_kernel())
    benched = []
    real_bench = kernel._bench
    kernel._bench = lambda config, *a: benched.append(config) or real_bench(config, *a)
    for n in (100, 100, 300):
        x, out = inputs(n)
        before = out.copy()
        kernel[grid](x, out, n)
        np.testing.assert_allclose(out, before.astype(np.float64) + x, rtol=1e-6)
    assert len(benched) == 4 and len(kernel.cache) == 2  # two keys, two configs each
    x64, out64 = (a.astype(np.float64) for a in inputs(100))
    kernel[grid](x64, out64, 100)  # same n, new dtype: a new key
    assert len(kernel.cache) == 3


@pytest.mark.parametrize("times", [{32: 2.0, 64: 1.0, 128: 3.0}, {32: 1.0, 64: 2.0, 128: 3.0}, {32: 3.0, 64: 2.0, 128: 1.0}])
def test_the_fastest_config_wins(times):
    """Timed by a clock that says how long each BLOCK takes: the fastest must be chosen (each
    config is the fastest in one case, so no fixed choice passes), and the launch uses it."""
    launched = []  # the BLOCK of each compile and launch, in order (the pre-hook sees each)
    configs = [kl.Config({"BLOCK": b}, pre_hook=lambda args: launched.append(args["BLOCK"])) for b in times]

    def clock(launch, warmup, rep):
        launch()
        return times[launched[-1]]

    kernel = kl.autotune(configs, key=["n"], restore_value=["out_ptr"], do_bench=clock)(accumulate_kernel())
    x, out = inputs(128)
    before = out.copy()
    kernel[grid](x, out, 128)
    fastest = min(times, key=times.get)
    assert kernel.best_config.kwargs["BLOCK"] == fastest
    assert {c.kwargs["BLOCK"]: t for c, t in kernel.configs_timings.items()} == times
    # each config compiled and timed once (its pre_hook runs before both), then the winner's launch
    assert launched == [b for b in times for _ in range(2)] + [fastest]
    np.testing.assert_allclose(out, before.astype(np.float64) + x, rtol=1e-6)  # one launch's effect


def test_print_autotuning(monkeypatch, capsys):
    monkeypatch.setenv("KERNELLAB_PRINT_AUTOTUNING", "1")
    kernel = kl.autotune(CONFIGS, key=["n"], restore_value=["out_ptr"])(accumulate_kernel())
    x, out = inputs(64)
    kernel[grid](x, out, 64)
    printed = capsys.readouterr().out
    assert "Autotuning kernel accumulate" in printed and f"BLOCK: {kernel.best_config.kwargs['BLOCK']}" in printed


def test_pruning_limits_the_configs_timed():
    configs = CONFIGS + [kl.Config({"BLOCK": 128})]
    kernel = kl.autotune(
        configs,
        key=["n"],
        restore_value=["out_ptr"],
        prune_configs_by={
            "early_config_prune": lambda cs, named: [c for c in cs if c.kwargs["BLOCK"] <= named["n"]],
            "perf_model": lambda **kw: kw["BLOCK"],
            "top_k": 1,
        },
    )(accumulate_kernel())
    x, out = inputs(100)
    before = out.copy()
    kernel[grid](x, out, 100)
    assert list(kernel.configs_timings) == [configs[0]]
    np.testing.assert_allclose(out, before.astype(np.float64) + x, rtol=1e-6)


def test_pruning_gets_the_launch_keywords_as_triton_passes_them():
    """Triton 3.3+ calls `early_config_prune(configs, named_args, **kwargs)` with the launch's
    keyword arguments (tutorial 06 reads `kwargs["N_CTX"]`); two-argument functions written for
    older Triton still get `(configs, named_args)`."""
    configs = CONFIGS + [kl.Config({"BLOCK": 128})]
    seen = []

    def prune(configs, named_args, **kwargs):
        seen.append((sorted(named_args), kwargs))
        return [c for c in configs if c.kwargs["BLOCK"] <= kwargs["n"]]

    kernel = kl.autotune(configs, key=["n"], restore_value=["out_ptr"],
                         prune_configs_by={"early_config_prune": prune})(accumulate_kernel())  # fmt: skip
    x, out = inputs(100)
    before = out.copy()
    kernel[grid](x, out, n=100)
    assert seen == [(["n", "out_ptr", "x_ptr"], {"n": 100})]
    assert set(kernel.configs_timings) == set(CONFIGS)  # 128 > n was pruned
    np.testing.assert_allclose(out, before.astype(np.float64) + x, rtol=1e-6)
    with pytest.raises(ValueError, match="early_config_prune left no config"):
        kernel[grid](x, out, n=16)


def _set_block(nargs):
    nargs["src"].block_shape = nargs["dst"].block_shape = [nargs["BLOCK"]]


@kl.jit
def descriptor_copy(src, dst, BLOCK: tl.constexpr):
    offset = tl.program_id(0) * BLOCK
    dst.store([offset], src.load([offset]) * 3)


def test_pre_hooks_run_before_each_config_compiles():
    """A config's pre_hook may set what its compile reads, as tutorials 06 and 09 set a host
    descriptor's block shape from a placeholder: it runs before every compile and launch."""
    from kernellab.tools.tensor_descriptor import TensorDescriptor

    configs = [kl.Config({"BLOCK": b}, pre_hook=_set_block) for b in (16, 64)]
    kernel = kl.autotune(configs, key=[])(descriptor_copy)
    x = inputs(200)[0]
    out = np.full_like(x, np.nan)
    src, dst = TensorDescriptor.from_tensor(x, [1]), TensorDescriptor.from_tensor(out, [1])
    kernel[lambda meta: (kl.cdiv(200, meta["BLOCK"]),)](src, dst)
    np.testing.assert_array_equal(out, x * 3)
    assert set(kernel.configs_timings) == set(configs) and dst.block_shape == (kernel.best_config.kwargs["BLOCK"],)


def test_a_descriptor_arguments_dtype_is_part_of_the_key():
    """An fp16 and an fp32 descriptor of one shape tune apart: on a GPU the fp32 tiles may not
    fit the fp16 ones' config (the key is the values of `key` and every array's dtype)."""
    from kernellab.tools.tensor_descriptor import TensorDescriptor

    @kl.jit
    def double(x_desc, out_ptr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK
        tl.store(out_ptr + offs + tl.arange(0, BLOCK), x_desc.load([offs]) * 2)

    kernel = kl.autotune([kl.Config({}, num_warps=1), kl.Config({}, num_warps=2)], key=[])(double)
    rng = np.random.default_rng()
    for dtype in (np.float16, np.float32):
        x = rng.standard_normal(256).astype(dtype)
        out = np.full(256, np.nan, np.float32)
        kernel[(8,)](TensorDescriptor.from_tensor(x, [32]), out, BLOCK=32)
        np.testing.assert_array_equal(out, x.astype(np.float32) * 2)
    assert sorted(kernel.cache) == [("float16", "float32"), ("float32", "float32")]


def test_tuned_meta_parameters_cannot_also_be_passed():
    kernel = kl.autotune(CONFIGS, key=["n"])(accumulate_kernel())
    x, out = inputs(64)
    with pytest.raises(ValueError, match="conflicting meta-parameters BLOCK"):
        kernel[grid](x, out, 64, BLOCK=32)


def test_a_key_naming_no_parameter_warns_and_is_ignored():
    """Triton ignores such a key (its tutorial 08 has one): warn, tune on the others, run."""
    tune = kl.autotune(CONFIGS, key=["nn", "n"], restore_value=["out_ptr"])
    with pytest.warns(UserWarning, match=r"key names 'nn', which is not a parameter .*mean 'n'"):
        kernel = tune(accumulate_kernel())
    assert kernel.key == ["n"]
    x, out = inputs(100)
    before = out.copy()
    kernel[grid](x, out, 100)
    np.testing.assert_allclose(out, before.astype(np.float64) + x, rtol=1e-6)
    assert list(kernel.cache) == [(100, "float32", "float32")]


def test_unknown_restore_value_is_refused():
    with pytest.raises(ValueError, match="no parameter 'outs'"):
        kl.autotune(CONFIGS, key=["n"], restore_value=["outs"])(accumulate_kernel())


def test_config_reads_like_triton():
    config = kl.Config({"BLOCK": 64}, num_warps=8, num_stages=2)
    assert config.all_kwargs() == {"BLOCK": 64, "num_warps": 8, "num_stages": 2, "num_ctas": 1}
    assert repr(config) == "BLOCK: 64, num_warps: 8, num_ctas: 1, num_stages: 2"


def test_heuristics_compute_meta_parameters():
    @kl.heuristics({"BLOCK": lambda args: kl.next_power_of_2(args["n"]), "EVEN": lambda args: args["n"] % 2 == 0})
    @kl.jit
    def scale(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr, EVEN: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * factor, mask=mask)

    for n in (37, 100):
        x, _ = inputs(n)
        out = np.full(n, np.nan, np.float32)
        ck = scale[(1,)](x, out, n, 3.0)
        np.testing.assert_allclose(out, x.astype(np.float64) * 3, rtol=1e-6)
        assert ck.metadata["constexprs"]["BLOCK"] == kl.next_power_of_2(n)
        assert ck.metadata["constexprs"]["EVEN"] == (n % 2 == 0)


def test_autotune_over_heuristics():
    @kl.autotune([kl.Config({"BLOCK": 32}), kl.Config({"BLOCK": 64})], key=["n"], restore_value=["out_ptr"])
    @kl.heuristics({"ADD": lambda args: args["n"] > 0})
    @kl.jit
    def maybe_add(x_ptr, out_ptr, n, BLOCK: tl.constexpr, ADD: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        if ADD:
            tl.store(out_ptr + offs, tl.load(out_ptr + offs, mask=mask) + tl.load(x_ptr + offs, mask=mask), mask=mask)

    x, out = inputs(90)
    before = out.copy()
    maybe_add[grid](x, out, 90)
    np.testing.assert_allclose(out, before.astype(np.float64) + x, rtol=1e-6)
