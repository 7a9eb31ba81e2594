"""zoo.models.bert_heads: the three fine-tuning heads over a Bert's encoder (their Hugging Face
parity is in tests/zoo/convert/test_hf_bert_heads.py)."""

from __future__ import annotations

import pytest
import torch

from zoo.models.bert import Bert, BertModelConfig, build_bert
from zoo.models.bert_heads import (
    BertEncoder,
    BertForQuestionAnswering,
    BertForSequenceClassification,
    BertForTokenClassification,
    BertHeadEnsemble,
)

HEADS = {
    "sequence": lambda bert: BertForSequenceClassification(bert, 3, dropout=0.1),
    "token": lambda bert: BertForTokenClassification(bert, 5, dropout=0.1),
    "span": BertForQuestionAnswering,
}


CONFIG = BertModelConfig(num_layers=2, dim=32, num_heads=2, ffn_dim=64, max_len=40)


def pretrained() -> Bert:
    """A small BERT with noise on every parameter, standing in for a pretrained one."""
    torch.manual_seed(0)
    bert = build_bert(CONFIG, 97, 0)
    with torch.no_grad():
        for param in bert.parameters():
            param.add_(torch.randn_like(param) * 0.1)
    return bert.eval()


def inputs(batch: int = 3, length: int = 17):
    generator = torch.Generator().manual_seed(1)
    ids = torch.randint(5, 97, (batch, length), generator=generator)
    types = (torch.arange(length) >= length // 2).long().expand(batch, -1).clone()
    ids[1, 11:] = 0  # a padded row
    return ids, types, ids != 0


def test_encoder_is_the_bert_without_its_pretraining_heads():
    bert = pretrained()
    ids, types, mask = inputs()
    keys = {k for k in bert.state_dict() if not k.startswith(("mlm_head.", "nsp_head."))}
    for pooler in (True, False):
        encoder = BertEncoder(bert, pooler=pooler).eval()
        assert set(encoder.state_dict()) == {k for k in keys if pooler or not k.startswith("pooler.")}
        with torch.no_grad():
            torch.testing.assert_close(encoder(ids, types, mask), bert.encode(ids, types, mask))
    hidden = bert.encode(ids, types, mask)
    torch.testing.assert_close(BertEncoder(bert, pooler=True).pool(hidden), bert.pool(hidden))
    with pytest.raises(RuntimeError, match="without the pooler"):
        BertEncoder(bert, pooler=False).pool(hidden)


@pytest.mark.parametrize("head", HEADS)
def test_heads_start_from_the_given_bert_and_hold_no_pretraining_heads(head):
    bert = pretrained()
    model = HEADS[head](bert).eval()
    names = {n for n, _ in model.named_parameters()}
    assert not any("mlm_head" in n or "nsp_head" in n for n in names)
    assert any(n.startswith("bert.pooler.") for n in names) == (head == "sequence")  # read only there
    # The encoder is the Bert's (shared), and a Bert state dict fills it under "bert." unrenamed.
    assert model.bert.embeddings is bert.embeddings and model.bert.encoder is bert.encoder
    fresh = HEADS[head](build_bert(CONFIG, 97, 0))
    encoder = {f"bert.{k}": v for k, v in bert.state_dict().items() if f"bert.{k}" in fresh.state_dict()}
    head_state = {k: v for k, v in model.state_dict().items() if not k.startswith("bert.")}
    fresh.load_state_dict({**encoder, **head_state})  # strict: every key filled
    ids, types, mask = inputs()
    with torch.no_grad():
        torch.testing.assert_close(fresh.eval()(ids, types, mask), model(ids, types, mask))


def test_logits_are_the_heads_over_the_encoder():
    bert = pretrained()
    ids, types, mask = inputs()
    with torch.no_grad():
        hidden = bert.encode(ids, types, mask)
        sequence = BertForSequenceClassification(bert, 3).eval()
        torch.testing.assert_close(sequence(ids, types, mask), sequence.classifier(bert.pool(hidden)))
        token = BertForTokenClassification(bert, 5).eval()
        torch.testing.assert_close(token(ids, types, mask), token.classifier(hidden))
        span = BertForQuestionAnswering(bert).eval()
        start, end = span(ids, types, mask)
        torch.testing.assert_close(torch.stack([start, end], -1), span.span_head(hidden))
    assert sequence(ids).shape == (3, 3) and token(ids).shape == (3, 17, 5) and start.shape == (3, 17)


def test_padding_does_not_change_real_tokens():
    model = BertForTokenClassification(pretrained(), 4).eval()
    ids, types, mask = inputs()
    with torch.no_grad():
        alone = model(ids[1:2, :11], types[1:2, :11])
        padded = model(ids, types, mask)[1:2, :11]
    torch.testing.assert_close(padded, alone, atol=1e-5, rtol=1e-5)


def test_new_head_initialisation_and_label_count():
    bert = build_bert(BertModelConfig(num_layers=1, dim=256, num_heads=2, ffn_dim=64), 97, 0)
    for linear in (BertForTokenClassification(bert, 40).classifier, BertForQuestionAnswering(bert).span_head):
        assert abs(linear.weight.std().item() - 0.02) < 2e-3 and (linear.bias == 0).all()
    with pytest.raises(ValueError, match="at least 2 labels"):
        BertForSequenceClassification(bert, 1)


@pytest.mark.parametrize("head", HEADS)
def test_backward_reaches_the_encoder_with_finite_gradients(head):
    torch.manual_seed(3)
    model = HEADS[head](build_bert(CONFIG, 97, 0)).train()
    ids, types, mask = inputs()
    out = model(ids, types, mask)
    loss = sum(x.square().mean() for x in out) if head == "span" else out.square().mean()
    loss.backward()
    for name, param in model.named_parameters():
        assert param.grad is not None and torch.isfinite(param.grad).all(), name
    assert model.bert.embeddings.tokens.weight.grad.abs().sum() > 0


def member(head: str, seed: int) -> torch.nn.Module:
    """A head over its own noisy copy of the pretrained BERT: members that disagree."""
    model = HEADS[head](pretrained())
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for param in model.parameters():
            param.add_(torch.randn(param.shape, generator=generator) * 0.3)
    return model.eval()


@pytest.mark.parametrize("head", HEADS)
def test_an_ensemble_predicts_its_members_mean_probability(head):
    members = [member(head, seed) for seed in (1, 2, 3)]
    ids, types, mask = inputs()
    with torch.no_grad():
        outputs = [m(ids, types, mask) for m in members]
        together = BertHeadEnsemble(members).eval()(ids, types, mask)
    if head != "span":
        mean = torch.stack([out.softmax(-1) for out in outputs]).mean(0)
        torch.testing.assert_close(together.softmax(-1), mean, atol=1e-6, rtol=1e-5)
        return
    for end in (0, 1):  # start, end: over each row's real tokens only
        for row, length in enumerate(mask.sum(1).tolist()):
            mean = torch.stack([out[end][row, :length].softmax(-1) for out in outputs]).mean(0)
            torch.testing.assert_close(together[end][row, :length].exp(), mean, atol=1e-6, rtol=1e-5)
            assert together[end][row, length:].eq(float("-inf")).all()


def test_an_ensemble_of_different_heads_is_refused():
    with pytest.raises(ValueError, match="one kind of head"):
        BertHeadEnsemble([member("sequence", 1), member("token", 2)])
