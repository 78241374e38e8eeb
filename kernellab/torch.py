"""`kl.torch.custom_op`: a kernel as a PyTorch operator, in one line or as a decorator.

    fused_add = kl.torch.custom_op(
        "mylib::fused_add", add_kernel,
        outputs=lambda x, y: torch.empty_like(x),           # what the op returns (shapes, dtypes)
        grid=lambda x, y, out: (kl.cdiv(x.numel(), 1024),),  # from the inputs and the outputs
        args=lambda x, y, out: (x, y, out, x.numel()),       # the kernel's arguments (default: all)
        constexprs={"BLOCK": 1024},
    )

The op is registered with `torch.library.custom_op`: `torch.compile` sees one opaque node and
keeps the graph whole around it, because `outputs` doubles as the fake (meta) implementation
(allocating with `torch.empty_like` and friends works on fake tensors too). Given `backward`,
the op is differentiable (`register_autograd`). The kernel runs where the tensors live: on the
GPU for CUDA tensors, on the interpreter for CPU tensors.

`outputs`' parameters are the op's inputs; unannotated ones are tensors and an unannotated
return is one tensor (annotate `-> tuple[torch.Tensor, torch.Tensor]` for several, or `x: float`
for a scalar input), which is what `torch.library` needs to write the op's schema.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence

import torch


def custom_op(
    name: str,
    kernel,
    *,
    grid: Callable,
    outputs: Callable | None = None,
    args: Callable | None = None,
    constexprs: dict | None = None,
    mutates_args: Sequence[str] = (),
    backward: Callable | None = None,
    setup_context: Callable | None = None,
):
    """Register `kernel` as the operator `name` ("namespace::op"); returns the operator.

    Without `outputs`, returns a decorator for it:

        @kl.torch.custom_op("mylib::fused_add", add_kernel, grid=...)
        def fused_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            return torch.empty_like(x)

    `grid(*inputs, *outputs)` gives the launch grid (a tuple, or Triton's function of the
    meta-parameters); `args(*inputs, *outputs)` the kernel's runtime arguments in order (default:
    the inputs then the outputs); `constexprs` its meta-parameters. `backward(ctx, *grads)`
    returns one gradient per input (None for those without); `setup_context(ctx, inputs,
    output)` saves what it needs (default: `ctx.inputs`, `ctx.output`).
    """
    if outputs is None:
        return lambda fn: custom_op(
            name, kernel, grid=grid, outputs=fn, args=args, constexprs=constexprs,
            mutates_args=mutates_args, backward=backward, setup_context=setup_context,
        )  # fmt: skip
    if "::" not in name:
        raise ValueError(f"an operator name is 'namespace::name' (e.g. 'mylib::fused_add'), got {name!r}")
    if setup_context is not None and backward is None:
        raise TypeError(f"{name}: setup_context without backward does nothing; pass backward=...")
    meta = dict(constexprs or {})
    allocate = _typed(outputs)

    def launch(*inputs):
        made = allocate(*inputs)
        outs = made if isinstance(made, tuple) else (made,)
        kernel_args = args(*inputs, *outs) if args is not None else (*inputs, *outs)
        kernel[grid(*inputs, *outs)](*kernel_args, **meta)
        return made

    launch.__signature__ = inspect.signature(allocate)
    launch.__annotations__ = dict(allocate.__annotations__)
    op = torch.library.custom_op(name, launch, mutates_args=tuple(mutates_args))
    op.register_fake(allocate)
    if backward is not None:
        op.register_autograd(backward, setup_context=setup_context or _keep_inputs_and_output)
    return op


def _typed(fn: Callable) -> Callable:
    """`fn` with the annotations torch.library reads: tensors where none are written."""
    signature = inspect.signature(fn)
    params = [
        p.replace(annotation=torch.Tensor) if p.annotation is inspect.Parameter.empty else p
        for p in signature.parameters.values()
    ]
    ret = torch.Tensor if signature.return_annotation is inspect.Signature.empty else signature.return_annotation

    def allocate(*inputs):
        return fn(*inputs)

    allocate.__signature__ = signature.replace(parameters=params, return_annotation=ret)
    allocate.__annotations__ = {p.name: p.annotation for p in params} | {"return": ret}
    allocate.__name__ = getattr(fn, "__name__", "outputs")
    return allocate


def _keep_inputs_and_output(ctx, inputs, output) -> None:
    ctx.inputs, ctx.output = inputs, output


__all__ = ["custom_op"]
