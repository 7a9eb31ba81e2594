"""BERT fine-tuned for the paper's three kinds of task (Devlin et al., 2019, section 4): a label per
sentence or sentence pair from the pooled [CLS] state, a label per token, and an answer span
(start and end logits over a passage). Hugging Face's BertForSequenceClassification,
BertForTokenClassification and BertForQuestionAnswering convert both ways in
zoo.convert.hf_bert_heads.

Each model wraps the embeddings, encoder and (for sentence labels) pooler of a `zoo.models.bert.Bert`
in a `BertEncoder`, taking those modules from the Bert it is given (pretrained or fresh from
`build_bert`) without copying them; the masked-LM and next-sentence heads stay behind, so they
are neither parameters nor state-dict keys of the fine-tuned model. The encoder's keys are the
Bert's own under `bert.` (`bert.embeddings.tokens.weight`, ...), so a Bert state dict loads
into it unrenamed. A new head starts as Hugging Face's does: weights N(0, 0.02), biases zero.

Shape key: B batch, T tokens, D model dim, L labels.
"""

from __future__ import annotations

from typing import NamedTuple

from torch import Tensor, nn

from zoo.blocks import Dropout
from zoo.blocks.linear import Linear
from zoo.models.bert import INIT_STD, Bert
from zoo.models.ensemble_mean import log_mean_probability


class BertEncoder(nn.Module):
    """A Bert without its pretraining heads: ids (B, T) -> hidden states (B, T, D), and with
    `pooler` the pooled [CLS] state (B, D).

    `encode` and `pool` are Bert's own methods, so both models compute the same thing by
    construction (they read only the modules and attributes taken here).

    Args:
        bert: the BERT whose embeddings, encoder and pooler are taken (shared, not copied).
        pooler: keep the pooler (sentence labels read it; token and span heads do not, and an
            unused parameter would only sit in the optimizer and the checkpoints).
    """

    encode = Bert.encode

    def __init__(self, bert: Bert, *, pooler: bool) -> None:
        super().__init__()
        self.vocab_size, self.pad_id, self.max_len = bert.vocab_size, bert.pad_id, bert.max_len
        self.dim = bert.pooler.in_features
        self.embeddings, self.encoder = bert.embeddings, bert.encoder
        self.pooler = bert.pooler if pooler else None

    def pool(self, hidden: Tensor) -> Tensor:
        """hidden (B, T, D) -> the pooled representation (B, D), as `Bert.pool`."""
        if self.pooler is None:
            raise RuntimeError("this BertEncoder was built without the pooler (pooler=False)")
        return Bert.pool(self, hidden)

    def forward(
        self, input_ids: Tensor, token_type_ids: Tensor | None = None, attention_mask: Tensor | None = None
    ) -> Tensor:
        return self.encode(input_ids, token_type_ids, attention_mask)


def _new_linear(dim: int, out: int) -> nn.Linear:
    """A head's linear layer initialised as Hugging Face's BERT heads: N(0, 0.02), bias zero."""
    linear = Linear(dim, out)
    nn.init.normal_(linear.weight, std=INIT_STD)
    nn.init.zeros_(linear.bias)
    return linear


class _Classifier(nn.Module):
    """Dropout and a linear layer to L labels over a BertEncoder, which keeps the pooler when the
    subclass reads the pooled state (`pooled`).

    Args:
        bert: the encoder's source (pretrained, or fresh from `build_bert` for random weights).
        num_labels: L (at least 2: Hugging Face reads one output as a regression, which this is not).
        dropout: before the linear layer (Hugging Face: classifier_dropout, else hidden_dropout_prob).
    """

    pooled: bool

    def __init__(self, bert: Bert, num_labels: int, *, dropout: float = 0.1) -> None:
        super().__init__()
        if num_labels < 2:
            raise ValueError(f"a classifier needs at least 2 labels, got num_labels={num_labels}")
        self.bert = BertEncoder(bert, pooler=self.pooled)
        self.dropout = Dropout(dropout)
        self.classifier = _new_linear(self.bert.dim, num_labels)


class BertForSequenceClassification(_Classifier):
    """ids (B, T) -> logits (B, L): dropout and a linear layer over the pooled [CLS] state.
    Arguments as `_Classifier`'s: bert, num_labels, dropout."""

    pooled = True

    def forward(
        self, input_ids: Tensor, token_type_ids: Tensor | None = None, attention_mask: Tensor | None = None
    ) -> Tensor:
        """attention_mask: bool (B, T), True on real tokens (default: every id but [PAD])."""
        pooled = self.bert.pool(self.bert.encode(input_ids, token_type_ids, attention_mask))
        return self.classifier(self.dropout(pooled))


class BertForTokenClassification(_Classifier):
    """ids (B, T) -> logits (B, T, L): dropout and a linear layer on every token's last state.
    Every position gets logits; which ones a label scores (a word's first piece, say) is the
    task's choice. Arguments as `_Classifier`'s: bert, num_labels, dropout."""

    pooled = False

    def forward(
        self, input_ids: Tensor, token_type_ids: Tensor | None = None, attention_mask: Tensor | None = None
    ) -> Tensor:
        """attention_mask: bool (B, T), True on real tokens (default: every id but [PAD])."""
        return self.classifier(self.dropout(self.bert.encode(input_ids, token_type_ids, attention_mask)))


class SpanLogits(NamedTuple):
    """start, end: (B, T), the logits of each token starting and ending the answer (every
    position; zoo.decode.spans keeps the passage's)."""

    start: Tensor
    end: Tensor


class BertForQuestionAnswering(nn.Module):
    """ids (B, T) of "[CLS] question [SEP] passage [SEP]" -> SpanLogits, start and end (B, T):
    one linear layer to 2 outputs per token (the paper's start and end vectors S and E). No
    dropout, as in Hugging Face's.

    Args:
        bert: the encoder's source (pretrained, or fresh from `build_bert` for random weights).
    """

    def __init__(self, bert: Bert) -> None:
        super().__init__()
        self.bert = BertEncoder(bert, pooler=False)
        self.span_head = _new_linear(self.bert.dim, 2)

    def forward(
        self, input_ids: Tensor, token_type_ids: Tensor | None = None, attention_mask: Tensor | None = None
    ) -> SpanLogits:
        """attention_mask: bool (B, T), True on real tokens (default: every id but [PAD])."""
        logits = self.span_head(self.bert.encode(input_ids, token_type_ids, attention_mask))
        return SpanLogits(logits[..., 0], logits[..., 1])


class BertHeadEnsemble(nn.Module):
    """Fine-tuned heads of one kind read as one model (fairseq's `--path a.pt:b.pt`): each output
    is the log of the members' mean probability, over the labels (sentence and token labels) or,
    for spans, over each input's real tokens, start and end apart. Its softmax is that mean
    probability, so whatever reads a member's logits reads the ensemble's. Inputs as a member's.

    Args:
        members: two or more models of one class (BertForSequenceClassification, ...) that read
            the same ids: one tokenizer, one label set (the caller checks both).
    """

    def __init__(self, members: list[nn.Module]) -> None:
        super().__init__()
        kinds = {type(member).__name__ for member in members}
        if len(kinds) != 1:
            raise ValueError(f"an ensemble's members are one kind of head, got {', '.join(sorted(kinds))}")
        self.members = nn.ModuleList(members)

    def forward(
        self, input_ids: Tensor, token_type_ids: Tensor | None = None, attention_mask: Tensor | None = None
    ) -> Tensor | SpanLogits:
        outputs = [member(input_ids, token_type_ids, attention_mask) for member in self.members]
        if not isinstance(outputs[0], SpanLogits):
            return log_mean_probability(outputs)
        # A member scores padding too; the mean probability is over the tokens it reads.
        real = input_ids != self.members[0].bert.pad_id if attention_mask is None else attention_mask.bool()
        start, end = ([out[i].masked_fill(~real, float("-inf")) for out in outputs] for i in range(2))
        return SpanLogits(log_mean_probability(start), log_mean_probability(end))
