"""What each head makes of the model's outputs: its loss terms, its predictions, its metrics,
and one input line read and one prediction written. The task (training) and the spec (the verbs)
share these, so both score the same way.

Outputs per item (`outputs`): classify (L,) logits; tag (T, L); span (T, 2) start and end logits.
Metrics are percentages (MCC too: GLUE reports it x 100); `score` is the head's headline metric
(accuracy, chunk F1, SQuAD F1), the one train.best_metric names in every recipe.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from tasks.bert.finetune import metrics, squad
from tasks.bert.finetune.config import DistillConfig, FinetuneConfig
from tasks.bert.finetune.data import IGNORE, Batch, Encoded, encode_questions, encode_texts, encode_words
from tasks.bert.finetune.distill import distilled_loss
from tasks.bert.finetune.readers import Example, SquadExample, TaggedSentence
from zoo.config import UserError
from zoo.data.wordpiece import WordPieceTokenizer
from zoo.decode.spans import best_spans
from zoo.train import Term, move_to


def forward(model: nn.Module, batch: Batch) -> Tensor:
    """The head model on a batch: (B, L), (B, T, L) or (B, T, 2)."""
    out = model(batch.input_ids, batch.token_type_ids, batch.attention_mask)
    return torch.stack([out.start, out.end], dim=-1) if isinstance(out, tuple) else out


@torch.no_grad()
def run(model: nn.Module, encoded: Encoded, batch_size: int) -> list[Tensor]:
    """Each item's outputs, in item order, on the CPU in float32 (a token's row up to its length)."""
    device = next(model.parameters()).device
    found: list[Tensor | None] = [None] * len(encoded)
    for items, batch in encoded.eval_batches(batch_size):
        out = forward(model, move_to(batch, device)).float().cpu()
        for row, item in enumerate(items):
            found[item] = out[row] if out.dim() == 2 else out[row, : len(encoded.ids[item])]
    return found


def encode(cfg: FinetuneConfig, examples: list, tokenizer: WordPieceTokenizer, labels: list[str]) -> Encoded:
    """The head's inputs for `examples`; gold labels outside `labels` (a test-only tag) are IGNORE."""
    index, d = {label: i for i, label in enumerate(labels)}, cfg.data
    if cfg.head == "classify":
        gold = [index.get(e.label, IGNORE) for e in examples]
        return encode_texts(tokenizer, [e.texts for e in examples], gold, d.max_seq_length)
    if cfg.head == "tag":
        gold = [[index.get(tag, IGNORE) for tag in s.tags] for s in examples]
        return encode_words(tokenizer, examples, gold, d.max_seq_length)
    return encode_questions(tokenizer, examples, max_len=d.max_seq_length, doc_stride=d.doc_stride,
                            max_query_length=d.max_query_length)  # fmt: skip


def terms(head: str, out: Tensor, batch: Batch, distill: DistillConfig) -> dict[str, Term]:
    """The loss summed over the batch's units (see units), and the correct predictions; a batch
    with a teacher's logits (classify) adds them to the loss as `distill` weighs them."""
    if head == "span":  # the mean of the start and end cross-entropies, per window
        start, end = out.float().unbind(dim=-1)
        loss = (F.cross_entropy(start, batch.labels[:, 0], reduction="sum")
                + F.cross_entropy(end, batch.labels[:, 1], reduction="sum")) / 2  # fmt: skip
        both = (start.argmax(-1) == batch.labels[:, 0]) & (end.argmax(-1) == batch.labels[:, 1])
        return {"loss": Term(loss, {"acc": 100.0 * both.sum()})}
    logits, gold = out.float().flatten(0, -2), batch.labels.flatten()
    if batch.teacher_logits is not None:
        loss, kl = distilled_loss(logits, batch.teacher_logits, gold, distill)
        # acc: agreement with the gold label, or the teacher's where an augmented copy has none.
        target = torch.where(gold == IGNORE, batch.teacher_logits.argmax(-1), gold)
        correct = (logits.detach().argmax(-1) == target).sum()
        return {"loss": Term(loss, {"acc": 100.0 * correct, "kl": kl.detach()})}
    loss = F.cross_entropy(logits, gold, ignore_index=IGNORE, reduction="sum")
    correct = ((logits.detach().argmax(-1) == gold) & (gold != IGNORE)).sum()
    return {"loss": Term(loss, {"acc": 100.0 * correct})}


def units(head: str, batch: Batch) -> dict[str, int]:
    """Sentences or windows, or (tag) the labelled first pieces; and the real tokens."""
    loss = int((batch.labels != IGNORE).sum()) if head == "tag" else len(batch)
    return {"loss": loss, "tokens": int(batch.attention_mask.sum())}


Answer = tuple[str, float, int, int]  # text, score (start + end logit), start and end characters
NO_ANSWER: Answer = ("", float("-inf"), -1, -1)  # a passage that yields no span at all


def predict(
    cfg: FinetuneConfig, outputs: list[Tensor], encoded: Encoded, examples: list, labels: list[str],
    n_best: int = 1,
) -> list:  # fmt: skip
    """Per example: classify (label, probability); tag the tags, one a word (O for a word with no
    piece); span its `n_best` best answers (Answer), best first (at most the decode.n_best that
    decoding keeps), or [NO_ANSWER]."""
    if cfg.head == "classify":
        probabilities = torch.stack(outputs).softmax(dim=-1).max(dim=-1)
        return [(labels[i], p) for p, i in zip(probabilities.values.tolist(), probabilities.indices.tolist())]
    if cfg.head == "tag":
        return [[labels[int(out[p].argmax())] if p >= 0 else "O" for p in first]
                for out, first in zip(outputs, encoded.first)]  # fmt: skip
    windows: list[list[int]] = [[] for _ in examples]
    for item, question in enumerate(encoded.question):
        windows[question].append(item)
    return [_answers(cfg, example, [outputs[i] for i in items], [encoded.offsets[i] for i in items], n_best)
            for example, items in zip(examples, windows)]  # fmt: skip


def _answers(
    cfg: FinetuneConfig, example: SquadExample, outputs: list[Tensor], offsets: list, n_best: int
) -> list[Answer]:
    logits = nn.utils.rnn.pad_sequence(outputs, batch_first=True)  # (W, T, 2)
    # Decoding keeps decode.n_best answers (Hugging Face's n_best_size); the first n_best are asked for.
    decode = cfg.decode
    spans = best_spans(
        logits[..., 0],
        logits[..., 1],
        offsets,
        max_answer_length=decode.max_answer_length,
        n_best=decode.n_best,
    )
    answers = [(example.context[s.start : s.end], s.score, s.start, s.end) for s in spans[:n_best]]
    return answers or [NO_ANSWER]


def score(head: str, predictions: list, examples: list, labels: list[str]) -> dict[str, float]:
    """The head's metrics (percentages) and `score`, its headline one."""
    if head == "classify":
        gold, guess = [e.label for e in examples], [label for label, _ in predictions]
        found = {"accuracy": 100 * metrics.accuracy(gold, guess)}
        if len(labels) == 2:  # GLUE's binary metrics, labels[1] the positive class ("1" in GLUE)
            found["f1"] = 100 * metrics.binary_f1(gold, guess, positive=labels[1])
            found["mcc"] = 100 * metrics.mcc(gold, guess)
        return {**found, "score": found["accuracy"]}
    if head == "tag":
        chunks = metrics.chunk_scores([s.tags for s in examples], predictions)
        overall = chunks.overall
        found = {"f1": 100 * overall.f1, "precision": 100 * overall.precision, "recall": 100 * overall.recall}
        found.update({f"f1_{kind}": 100 * counts.f1 for kind, counts in chunks.by_type.items()})
        return {**found, "score": found["f1"]}
    answers = {e.id: ranked[0][0] for e, ranked in zip(examples, predictions)}
    found = squad.evaluate(squad.gold_answers(examples), answers)
    return {**found, "score": found["f1"]}


def summary(head: str, found: dict[str, float]) -> str:
    """The metrics in one line (two decimals)."""
    shown = {key: f"{value:.2f}" for key, value in found.items()}
    if head == "classify":
        binary = f", F1 {shown['f1']}, MCC {shown['mcc']}" if "f1" in found else ""
        return f"accuracy {shown['accuracy']}%{binary}"
    if head == "tag":
        kinds = ", ".join(f"{key[3:]} {value}" for key, value in shown.items() if key.startswith("f1_"))
        return f"chunk F1 {shown['f1']} (precision {shown['precision']}, recall {shown['recall']}; {kinds})"
    return f"SQuAD exact match {shown['exact_match']}, F1 {shown['f1']}"


def read_line(head: str, line: str, where: str, columns: int) -> Any:
    """One input line as an example without gold: classify a sentence or `a<TAB>b` (as many texts
    as the model was trained on: `columns`), tag words split on spaces, span `question<TAB>passage`."""
    if head == "tag":
        words = tuple(line.split())
        return TaggedSentence(words, ("O",) * len(words))
    parts = tuple(part.strip() for part in line.split("\t"))
    if head == "classify":
        if len(parts) != columns or not all(parts):
            shape = "a sentence" if columns == 1 else "two texts separated by a tab"
            raise UserError(f"{where}: the model classifies {shape}; this line has {len(parts)} text(s)")
        return Example(parts, "")
    if len(parts) != 2 or not all(parts):
        raise UserError(f"{where}: give the question, a tab, then the passage")
    return SquadExample(where, "", parts[1], parts[0], ())


def show(head: str, prediction: Any, as_json: bool, n_best: int = 1) -> Any:
    """A prediction as predict writes it: a line of text, or a JSON value. Span: with `n_best`
    1 the best answer, `answer<TAB>score` or one record; else each answer so, one a line, or a list
    of records (Hugging Face's question-answering pipeline answers a list for a top_k above 1)."""
    if head == "classify":
        label, probability = prediction
        return {"label": label, "probability": probability} if as_json else f"{label}\t{probability:.4f}"
    if head == "tag":
        return list(prediction) if as_json else " ".join(prediction)
    shown = [_show_answer(answer, as_json) for answer in prediction]
    if n_best == 1:
        return shown[0]
    return shown if as_json else "\n".join(shown)


def show_chunks(words: list[str], tags: list[str], as_json: bool) -> Any:
    """A tagged sentence as its chunks: the CoNLL-2000 bracketing, `[NP the dog] [VP ran] .` (words
    outside a chunk bare), or a JSON list of {"type", "text", "start", "end"}, start and end word
    positions (end exclusive), as Hugging Face's token-classification pipeline groups entities."""
    found = metrics.sentence_chunks(tags)
    if as_json:
        return [
            {"type": t, "text": " ".join(words[s : e + 1]), "start": s, "end": e + 1} for t, s, e in found
        ]
    parts, word = [], 0
    for kind, first, last in found:
        parts += [*words[word:first], f"[{kind} {' '.join(words[first : last + 1])}]"]
        word = last + 1
    return " ".join([*parts, *words[word:]])


def _show_answer(answer: Answer, as_json: bool) -> Any:
    text, value, start, end = answer
    return (  # no span at all (a passage of no tokens): no score (JSON has no -inf)
        {"answer": text, "score": value if text else None, "start": start, "end": end}
        if as_json
        else f"{text}\t{value:.4f}"
    )
