"""Label-smoothed cross-entropy against its definition."""

import torch

from zoo.blocks.cross_entropy import label_smoothed_cross_entropy


def test_label_smoothing_equals_the_definition_with_padding_ignored():
    torch.manual_seed(0)
    logits, target = torch.randn(2, 5, 7, dtype=torch.float64), torch.randint(1, 7, (2, 5))
    target[0, 3:] = 0  # padding
    eps = 0.1
    loss, nll, units = label_smoothed_cross_entropy(logits, target, smoothing=eps, ignore_index=0)
    logp = logits.log_softmax(-1)
    real = target != 0
    true_nll = -logp.gather(-1, target[..., None])[..., 0]
    smoothed = (1 - eps) * true_nll - eps * logp.mean(-1)  # against (1-eps) one_hot + eps/V
    assert units == real.sum()
    torch.testing.assert_close(loss.double(), smoothed[real].sum())
    torch.testing.assert_close(nll.double(), true_nll[real].sum())


def test_loss_and_gradient_equal_torch_cross_entropy_with_label_smoothing():
    torch.manual_seed(1)
    logits = torch.randn(3, 4, 11, dtype=torch.float64, requires_grad=True)
    target = torch.randint(1, 11, (3, 4))
    target[1, 2:] = -100
    loss, _, _ = label_smoothed_cross_entropy(logits, target, smoothing=0.2)
    (grad,) = torch.autograd.grad(loss, logits)
    ref = torch.nn.functional.cross_entropy(
        logits.flatten(0, 1), target.flatten(), label_smoothing=0.2, reduction="sum"
    )
    (ref_grad,) = torch.autograd.grad(ref, logits)
    torch.testing.assert_close(loss, ref)
    torch.testing.assert_close(grad, ref_grad)
