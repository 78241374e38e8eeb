"""`kl.torch.custom_op`: a kernel as a PyTorch operator that torch.compile keeps in one graph,
differentiable when given a backward; on CPU tensors (the interpreter) and CUDA tensors."""

import numpy as np
import pytest

import kernellab as kl
import kernellab.language as tl
from tests.conftest import cuda_available

torch = pytest.importorskip("torch")


@kl.jit
def scaled_add_kernel(x_ptr, y_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + alpha * y, mask=mask)


def _backward(ctx, grad):
    return grad, grad * ctx.inputs[2], None


def scaled_add_outputs(x, y, alpha: float):  # unannotated inputs are tensors; alpha is a float
    return torch.empty_like(x)


# one line: outputs, grid and arguments as functions of the op's inputs
scaled_add = kl.torch.custom_op(
    "kltest::scaled_add", scaled_add_kernel,
    outputs=scaled_add_outputs,
    grid=lambda x, y, alpha, out: (kl.cdiv(x.numel(), 256),),
    args=lambda x, y, alpha, out: (x, y, out, alpha, x.numel()),
    constexprs={"BLOCK": 256},
    backward=_backward,
)  # fmt: skip

@kl.jit
def split_kernel(x_ptr, pos_ptr, neg_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(pos_ptr + offs, tl.maximum(x, 0.0), mask=mask)
    tl.store(neg_ptr + offs, tl.minimum(x, 0.0), mask=mask)


@kl.torch.custom_op("kltest::split_signs", split_kernel, grid=lambda x, p, q: (kl.cdiv(x.numel(), 128),),
                    args=lambda x, p, q: (x, p, q, x.numel()), constexprs={"BLOCK": 128})  # fmt: skip
def split_signs(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.empty_like(x), torch.empty_like(x)


def devices():
    return [pytest.param("cpu", id="cpu"), pytest.param("cuda", id="cuda", marks=pytest.mark.gpu)]


def _on(device: str) -> str:
    if device == "cuda" and not cuda_available():
        pytest.skip("needs a CUDA GPU")
    return device


def f64(t) -> np.ndarray:
    return t.detach().cpu().double().numpy()


@pytest.mark.parametrize("device", devices())
def test_the_op_runs_the_kernel_and_differentiates(rng, device):
    device = _on(device)
    n = int(rng.integers(500, 1500))
    alpha = float(rng.uniform(-2, 2))
    x = torch.from_numpy(rng.standard_normal(n).astype(np.float32)).to(device).requires_grad_()
    y = torch.from_numpy(rng.standard_normal(n).astype(np.float32)).to(device).requires_grad_()
    out = scaled_add(x, y, alpha)
    np.testing.assert_allclose(f64(out), f64(x) + np.float32(alpha) * f64(y), rtol=1e-6, atol=1e-6)
    weights = torch.from_numpy(rng.standard_normal(n).astype(np.float32)).to(device)
    (out * weights).sum().backward()
    np.testing.assert_allclose(f64(x.grad), f64(weights), rtol=0)
    np.testing.assert_allclose(f64(y.grad), f64(weights) * alpha, rtol=1e-6)
    assert "float alpha" in str(scaled_add._opoverload._schema)


@pytest.mark.parametrize("device", devices())
def test_a_decorated_op_with_two_outputs(rng, device):
    device = _on(device)
    x = torch.from_numpy(rng.standard_normal(700).astype(np.float32)).to(device)
    pos, neg = split_signs(x)
    np.testing.assert_array_equal(f64(pos), np.maximum(f64(x), 0))
    np.testing.assert_array_equal(f64(neg), np.minimum(f64(x), 0))


class Block(torch.nn.Module):
    """A small layer with the fused kernel in the middle of ordinary torch ops."""

    def __init__(self, width: int):
        super().__init__()
        self.proj = torch.nn.Linear(width, width)

    def forward(self, x, skip):
        return torch.relu(scaled_add(self.proj(x), skip, 0.5)) * 2


@pytest.mark.parametrize("device", devices())
def test_torch_compile_keeps_the_graph_whole(rng, device):
    device = _on(device)
    torch.manual_seed(int(rng.integers(2**31)))
    block = Block(64).to(device)
    x, skip = torch.randn(8, 64, device=device), torch.randn(8, 64, device=device)
    explained = torch._dynamo.explain(block)(x, skip)
    assert explained.graph_break_count == 0 and explained.graph_count == 1
    compiled = torch.compile(block, backend="aot_eager", fullgraph=True)  # fullgraph: a break is an error
    np.testing.assert_allclose(f64(compiled(x, skip)), f64(block(x, skip)), rtol=1e-6, atol=1e-6)


def test_bad_registrations_say_what_to_change():
    with pytest.raises(ValueError, match="namespace::name"):
        kl.torch.custom_op("fused", scaled_add_kernel, grid=lambda *a: (1,), outputs=lambda x: x)
    with pytest.raises(TypeError, match="setup_context without backward"):
        kl.torch.custom_op("kltest::bad", scaled_add_kernel, grid=lambda *a: (1,), outputs=lambda x: x,
                           setup_context=lambda ctx, inputs, output: None)  # fmt: skip
