#!/usr/bin/env bash
# The whole GPU check in one command, run from the repository root on a machine with an NVIDIA
# GPU, torch and (optionally) triton:
#
#     bash benchmarks/device_run.sh
#
# 1. installs the wheels carried in .whl/ (xdsl, immutabledict, ordered-set) into /tmp/site;
# 2. prints the GPU, the versions, and checks that kernellab imports with this Python;
# 3. runs the GPU tests (pytest -m gpu), log in $OUT/gpu-tests.log;
# 4. runs benchmarks/gpu.py, log in $OUT/bench.log (+ its JSON in $OUT and benchmarks/results/);
# 5. prints a short summary last: test counts, failures, the key benchmark lines.
#
# Knobs (environment): KL_PYTEST_ARGS (default "-x"; e.g. "--maxfail=30" to see more failures),
# KL_TEST_SECONDS (300) and KL_BENCH_SECONDS (240) bound each part, KL_WORKERS (8) pytest-xdist
# workers when xdist is installed (0: none), KL_SKIP_TESTS=1 / KL_SKIP_BENCH=1.
set -u
cd "$(dirname "$0")/.." || exit 1
OUT=${OUT:-/tmp/kernellab-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1

echo "== setup =="
if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl || { echo "FATAL: installing .whl/*.whl failed"; exit 1; }
    export PYTHONPATH=/tmp/site:$PWD
else
    echo "note: no .whl/ directory: using the installed packages"
    export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
fi

nvidia-smi -L || echo "nvidia-smi failed"
python3 - <<'EOF'
import importlib, platform
print("python", platform.python_version())
for name in ("torch", "triton", "numpy", "ml_dtypes", "llvmlite", "xdsl", "pytest"):
    try:
        m = importlib.import_module(name)
        print(f"{name:10s} {getattr(m, '__version__', '?')}")
    except Exception as e:
        print(f"{name:10s} MISSING ({type(e).__name__}: {e})")
from importlib.metadata import version
for dist in ("cuda-python", "cuda-bindings", "cuda-core", "nvidia-nvjitlink", "pytest-timeout", "pytest-xdist"):
    try:
        print(f"{dist:17s} {version(dist)}")
    except Exception:
        print(f"{dist:17s} not installed")
try:
    import torch
    print("torch.cuda:", torch.cuda.is_available(), torch.version.cuda,
          torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")
except Exception as e:
    print("torch check failed:", e)
EOF

echo "== import check =="
# bytecode for kernellab and the carried wheels, as a pip install would have made (first-compile
# times otherwise include compiling every imported source file)
python3 -m compileall -q kernellab tests benchmarks ${PYTHONPATH%%:*} >/dev/null || echo "WARNING: compileall reported errors"
python3 - <<'EOF' || { echo "FATAL: kernellab does not import"; exit 1; }
import kernellab as kl, kernellab.language as tl
from kernellab.backends.nvidia import backend, driver, launcher, cubin, ptx
from kernellab.backends.nvidia.lowering import make_llir
from kernellab.backends.nvidia.pipeline import make_ttgir
print("kernellab imports; driver available:", driver.available(),
      "arch:", driver.visible_arch(), "nvJitLink:", cubin.nvjitlink_version())
EOF

TEST_RC=skipped
if [ "${KL_SKIP_TESTS:-0}" != "1" ]; then
    echo "== GPU tests =="
    EXTRA=()
    python3 -c "import pytest_timeout" 2>/dev/null && EXTRA+=(--timeout 300)
    WORKERS=${KL_WORKERS:-8}
    if [ "$WORKERS" != "0" ] && python3 -c "import xdist" 2>/dev/null; then
        EXTRA+=(-n "$WORKERS")
    fi
    # shellcheck disable=SC2086
    timeout -k 10 "${KL_TEST_SECONDS:-300}" python3 -m pytest -m gpu -q ${KL_PYTEST_ARGS:--x} \
        ${EXTRA[@]+"${EXTRA[@]}"} -p no:cacheprovider -rfEs 2>&1 | tee "$OUT/gpu-tests.log"
    TEST_RC=${PIPESTATUS[0]}
fi

BENCH_RC=skipped
if [ "${KL_SKIP_BENCH:-0}" != "1" ]; then
    echo "== benchmarks =="
    timeout -k 10 "${KL_BENCH_SECONDS:-240}" python3 benchmarks/gpu.py 2>&1 | tee "$OUT/bench.log"
    BENCH_RC=${PIPESTATUS[0]}
fi

echo
echo "=================== SUMMARY ==================="
nvidia-smi -L 2>/dev/null | head -2
echo "GPU tests: exit $TEST_RC (124 = ran out of time)"
if [ -f "$OUT/gpu-tests.log" ]; then
    grep -E "(passed|failed|error|skipped|no tests ran)" "$OUT/gpu-tests.log" | grep -E " in [0-9.]+s" | tail -1
    grep -E "^kernellab" "$OUT/gpu-tests.log" | tail -2
    grep -E "^(FAILED|ERROR) " "$OUT/gpu-tests.log" | head -15
fi
echo "benchmarks: exit $BENCH_RC (124 = ran out of time)"
if [ -f "$OUT/bench.log" ]; then
    grep -E "^KEY " "$OUT/bench.log"
    grep -E "^finished in" "$OUT/bench.log" | tail -1
fi
