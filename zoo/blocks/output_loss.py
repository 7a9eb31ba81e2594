"""The output projection and the label-smoothed cross-entropy fused, over row chunks.

A training step that projects every target position to the vocabulary materialises (N, V)
logits, their log-softmax and their gradient: for the Multi30k model (N ~ 3,800 tokens, V =
8,000) three 120 MB tensors per step, memory-bound passes that cost about as much as the
projection's matrix products (bench/results/training_profile_*.txt). Here each chunk of rows is
projected, its loss summed and its gradients with respect to the hidden states and the weight
computed at once while the chunk is still in cache, as in Liger-Kernel's fused linear
cross-entropy; padding rows are dropped before any of it. The loss is a sum, so the gradients
computed in the forward pass are only scaled by the incoming gradient in backward.

Under torch.compile the loss is computed unfused (zoo.blocks.cross_entropy): dropping padding
rows gives a data-dependent shape and the chunk loop a Python loop, each a graph break, while
inductor fuses the log-softmax and the loss of the plain form itself.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor

from zoo.blocks.cross_entropy import label_smoothed_cross_entropy
from zoo.blocks.linear import matmul_nt, onednn_applies

# Rows per chunk on a CPU. Each chunk adds its (V, D) product into the weight gradient, a read
# and a write of V x D floats, so a chunk needs enough rows to amortise that pass: fixed at 256
# rows, every vocabulary does better than under the former 4 MB logits budget (20 rows at GPT-2's
# 50,257 pieces, 31% slower than unfused; 1 thread, quiet: V=16,384 D=256 4,096 rows 1,386 ms
# against 1,436 at 64 rows and 1,624 unfused; V=8,000 D=512 1,015 against 1,063; V=50,257 D=768
# 1,024 rows 2,786 against 3,778 and 2,827 unfused). On a GPU each chunk costs a dozen kernel
# launches and the Python around them: with 4 MB chunks the base model's step (37,000 pieces: 28
# rows a chunk) ran at half Marian's speed on an H100, launch-bound
# (bench/results/gpu_translation_profile_before.txt); 1 GB of fp32 logits takes a ~4,000-token
# batch in one or two (gpu_translation_profile.txt).
CPU_CHUNK_ROWS = 256
GPU_CHUNK_BYTES = 1 << 30


class LossSums(NamedTuple):
    """Summed over the non-ignored targets: the smoothed loss, the plain NLL (no gradient) and
    their count, so a runner can normalise by the tokens of a whole accumulated step."""

    loss: Tensor
    nll: Tensor
    units: Tensor


class _FusedLinearCrossEntropy(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx,
        hidden: Tensor,
        weight: Tensor,
        target: Tensor,
        smoothing: float,
        compute_dtype: torch.dtype,
        grad_enabled: bool,
    ) -> tuple[Tensor, Tensor]:
        rows, vocab = hidden.shape[0], weight.shape[0]
        on_cpu = hidden.device.type == "cpu"
        chunk = CPU_CHUNK_ROWS if on_cpu else max(1, GPU_CHUNK_BYTES // (4 * vocab))
        w = weight.to(compute_dtype)
        exact = torch.promote_types(compute_dtype, torch.float32)  # the softmax and the sums: fp32 at least
        # Inside forward grad mode is always off: whether the caller's was is passed in.
        want_hidden = grad_enabled and ctx.needs_input_grad[0]
        want_weight = grad_enabled and ctx.needs_input_grad[1]
        grad_hidden = (
            torch.empty(hidden.shape, dtype=compute_dtype, device=hidden.device) if want_hidden else None
        )
        weight_sum = _WeightGradSum(w, hidden, exact) if want_weight else None
        loss = torch.zeros((), dtype=exact, device=hidden.device)
        nll = torch.zeros_like(loss)
        for start in range(0, rows, chunk):
            h = hidden[start : start + chunk].to(compute_dtype)
            t = target[start : start + chunk, None]
            logits = matmul_nt(h, w).to(exact)
            chunk_nll, chunk_loss, exps, total = _chunk_loss(logits, t, smoothing)
            nll += chunk_nll
            loss += chunk_loss
            if want_hidden or want_weight:
                # d loss / d logits = softmax - (1 - eps) one_hot - eps / V, built in place.
                grad = exps.div_(total).sub_(smoothing / vocab)
                grad.scatter_add_(-1, t, grad.new_full(t.shape, smoothing - 1.0))
                grad = grad.to(compute_dtype)
                # Written by the products themselves (out=, beta=1): no temporaries, and no extra
                # pass over the (V, D) weight gradient per chunk.
                if want_hidden and onednn_applies(grad, w):
                    grad_hidden[start : start + chunk] = matmul_nt(grad, w.t())
                elif want_hidden:
                    torch.mm(grad, w, out=grad_hidden[start : start + chunk])
                if weight_sum is not None:
                    weight_sum.add(grad, h)
        grad_weight = weight_sum.result() if weight_sum is not None else None
        ctx.save_for_backward(grad_hidden, grad_weight)
        ctx.hidden_dtype, ctx.weight_dtype = hidden.dtype, weight.dtype
        ctx.mark_non_differentiable(nll)
        return loss, nll

    @staticmethod
    def backward(ctx, grad_loss: Tensor, _grad_nll: Tensor):
        grad_hidden, grad_weight = ctx.saved_tensors
        return (
            grad_hidden.to(ctx.hidden_dtype) * grad_loss if grad_hidden is not None else None,
            grad_weight.to(ctx.weight_dtype) * grad_loss if grad_weight is not None else None,
            None,
            None,
            None,
            None,
        )


def _chunk_loss(logits: Tensor, target: Tensor, smoothing: float) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """A chunk's summed NLL and smoothed loss from its (rows, V) logits and (rows, 1) targets,
    with exp(logits - max) and its row sums, from which the caller builds the softmax. One exp
    pass serves the loss and the gradient: lse = max + log(sum e), the softmax e / sum e
    (logsumexp, then the softmax from it, took two: 26 ms of GPT micro's 720 ms step, one thread)."""
    top = logits.amax(-1, keepdim=True)
    exps = (logits - top).exp_()
    total = exps.sum(-1, keepdim=True)
    lse = top + total.log()
    nll = (lse - logits.gather(-1, target)).sum()
    loss = (1.0 - smoothing) * nll
    if smoothing:
        # Smoothing against (1 - eps) one_hot + eps / V: the uniform part is lse - mean(logits).
        loss = loss + smoothing * (lse - logits.mean(-1, keepdim=True)).sum()
    return nll, loss, exps, total


class _WeightGradSum:
    """The projection's (V, D) weight gradient, summed over the chunks: grad.T @ h each.

    On oneDNN it is summed transposed, (D, V) += h.T @ grad: oneDNN first copies a transposed
    input into rows, and h.T (D x chunk) is far narrower than grad.T (V x chunk): 10.2 against
    13.8 ms a chunk for an 8,000 x 256 projection, 5.5 against 8.3 for GPT micro's 8,192 x 128
    (Zen 4, one thread, each product alone; inside the translation step, whose caches the rest of
    the step shares, it gains little). Elsewhere the product adds itself in place (fp32), or
    through a temporary (bf16 products into an fp32 sum)."""

    def __init__(self, weight: Tensor, hidden: Tensor, dtype: torch.dtype) -> None:
        self.transposed = onednn_applies(weight, hidden[:1].to(weight.dtype))
        shape = weight.shape[::-1] if self.transposed else weight.shape
        self.sum = torch.zeros(shape, dtype=dtype, device=weight.device)

    def add(self, grad: Tensor, h: Tensor) -> None:
        if self.transposed:
            self.sum += matmul_nt(h.t(), grad.t())
        elif grad.dtype == self.sum.dtype:
            self.sum.addmm_(grad.T, h)
        else:
            self.sum += grad.T @ h

    def result(self) -> Tensor:
        """(V, D), in the weight's own layout."""
        return self.sum.t().contiguous() if self.transposed else self.sum


def linear_cross_entropy(
    hidden: Tensor, weight: Tensor, target: Tensor, *, smoothing: float = 0.0, ignore_index: int = -100
) -> LossSums:
    """Sum of label-smoothed cross-entropy of `hidden @ weight.T` against `target`, never
    holding the (N, V) logits.

    Args:
        hidden: (..., D) states before the output projection.
        weight: (V, D) the projection (no bias), e.g. tied to the embeddings.
        target: (...) class ids; `ignore_index` rows are dropped first.
        smoothing: eps_ls of the paper (0.1), against (1 - eps) one_hot + eps / V.
    Under autocast the products run in the autocast dtype and the softmax in fp32, as they would
    unfused.
    """
    if torch.compiler.is_compiling():
        return LossSums(
            *label_smoothed_cross_entropy(
                hidden @ weight.T, target, smoothing=smoothing, ignore_index=ignore_index
            )
        )
    device = hidden.device.type
    compute_dtype = torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device) else hidden.dtype
    target = target.reshape(-1)
    keep = target != ignore_index
    rows = hidden.reshape(-1, hidden.shape[-1])[keep]
    with torch.autocast(device, enabled=False):
        loss, nll = _FusedLinearCrossEntropy.apply(
            rows, weight, target[keep], smoothing, compute_dtype, torch.is_grad_enabled()
        )
    return LossSums(loss, nll, keep.sum())
