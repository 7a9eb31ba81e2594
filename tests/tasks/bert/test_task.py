"""The BERT task through the real runner: two terms exact under accumulation, learning."""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F

from tasks.bert.examples import IGNORE_INDEX
from tasks.bert.task import BertTask
from zoo.data.corpus import synthetic_documents
from zoo.data.wordpiece import WordPieceTokenizer
from zoo.models.bert import BertModelConfig
from zoo.train import OptimConfig, ScheduleConfig, fit
from zoo.train.checkpoint import load_checkpoint, step_checkpoints
from zoo.train.metrics_log import read_metrics

GROUPS = [range(0, 3), range(3, 10), range(10, 14)]  # micro-batches of 3, 7 and 4 pairs


class FixedBatches(BertTask):
    """The BERT task training on given example indices of epoch 0, as one or several batches
    (default: all of them as one batch), the same every epoch."""

    def __init__(self, cfg, groups=None):
        super().__init__(cfg)
        self.groups = groups

    def train_batches(self, epoch, *, start=0):
        groups = self.groups or [range(len(self.train.pairs(0)))]
        return iter([self.train.collate(0, indices) for indices in groups][start:])


def shared_vocab(tmp_path, documents: int) -> str:
    """One vocabulary for runs that are compared: WordPiece training breaks ties between equally
    frequent merges differently from one training to the next."""
    vocab = tmp_path / "vocab.txt"
    vocab.write_text(
        WordPieceTokenizer.train(
            (s for d in synthetic_documents(documents, seed=0) for s in d.sentences), vocab_size=200
        ).vocab_text()
    )
    return str(vocab)


def weights(run_dir):
    return load_checkpoint(step_checkpoints(run_dir / "checkpoints")[-1])["model"]


def test_two_terms_under_accumulation_equal_the_joined_batch_and_the_reference(recipe, tmp_path):
    recipe.train.max_steps = 1
    recipe.data.tokenizer = shared_vocab(tmp_path, 40)
    recipe.optim = OptimConfig(name="sgd", lr=0.5, momentum=0.0)
    accumulated = copy.deepcopy(recipe)
    accumulated.train.out_dir, accumulated.train.grad_accum = str(tmp_path / "acc"), 3
    fit(accumulated, FixedBatches(accumulated, GROUPS))
    joined = copy.deepcopy(recipe)
    joined.train.out_dir = str(tmp_path / "joined")
    task = FixedBatches(joined, [range(0, 14)])
    result = fit(joined, task)

    a, b = weights(tmp_path / "acc"), weights(tmp_path / "joined")
    for name in a:
        torch.testing.assert_close(a[name], b[name], rtol=1e-5, atol=1e-6)
    # The reference: mean cross-entropy over all masked tokens plus mean over all pairs.
    torch.manual_seed(joined.train.seed)
    model = task.build_model()
    batch = task.train.collate(0, range(0, 14))
    logits = model(batch.input_ids, batch.token_type_ids, batch.attention_mask)
    mlm = F.cross_entropy(
        logits.mlm.reshape(-1, logits.mlm.shape[-1]), batch.mlm_labels.reshape(-1), ignore_index=IGNORE_INDEX
    )
    nsp = F.cross_entropy(logits.nsp, batch.nsp_labels)
    logged = [read_metrics(tmp_path / d, "train")[0] for d in ("acc", "joined")]
    for record in logged:
        assert abs(record["mlm_loss"] - mlm.item()) < 1e-5
        assert abs(record["nsp_loss"] - nsp.item()) < 1e-5
    assert not torch.equal(a["nsp_head.weight"], model.state_dict()["nsp_head.weight"])
    assert result.step == 1


def test_tiny_bert_overfits_a_few_documents(recipe, tmp_path):
    """Through the runner, a tiny BERT memorises one batch of six documents (the same pairs and
    masks every step); scored on exactly those examples (the held-out file is the training file,
    and the run's seed is the evaluation seed), both heads reach 100%."""
    corpus = tmp_path / "docs.txt"
    corpus.write_text("\n\n".join("\n".join(d.sentences) for d in synthetic_documents(6, seed=3)))
    recipe.data.source, recipe.data.path, recipe.data.valid = "text", str(corpus), [str(corpus)]
    recipe.model = BertModelConfig(
        num_layers=2, dim=64, num_heads=2, ffn_dim=128, max_len=32, dropout=0.0, attn_dropout=0.0
    )
    recipe.train.max_steps, recipe.train.log_every = 80, 20
    recipe.optim.lr, recipe.schedule.warmup_steps = 3e-3, 5
    metrics = fit(recipe, FixedBatches(recipe)).metrics
    assert metrics["mlm_acc"] == 100 and metrics["nsp_acc"] == 100, metrics


def test_an_interrupted_run_resumes_on_the_same_batches(recipe, tmp_path):
    """3 steps, stop, 3 more == 6 uninterrupted steps (dropout on, batches crossing an epoch),
    to the last bit of every weight: pairs and masks are a function of (seed, epoch, index)."""
    recipe.model = BertModelConfig(num_layers=1, dim=32, num_heads=2, ffn_dim=64, max_len=32)
    recipe.data.synthetic_train = 12  # about 5 batches of 4 pairs per epoch
    recipe.data.tokenizer = shared_vocab(tmp_path, 12)
    recipe.schedule = ScheduleConfig(name="constant", warmup_steps=0)  # the same for 3 and 6 steps
    whole = copy.deepcopy(recipe)
    whole.train.out_dir, whole.train.max_steps = str(tmp_path / "whole"), 6
    fit(whole, BertTask(whole))
    split = copy.deepcopy(recipe)
    split.train.out_dir, split.train.max_steps = str(tmp_path / "split"), 3
    fit(split, BertTask(split))
    split.train.max_steps = 6
    fit(split, BertTask(split))
    a, b = weights(tmp_path / "whole"), weights(tmp_path / "split")
    for name in a:
        torch.testing.assert_close(a[name], b[name], rtol=0, atol=0)


def test_the_compiled_steps_fixed_width_positions_give_the_same_terms(recipe, tmp_path):
    """Under train.compile the step reads the predicted positions at the fixed width
    max_predictions_per_seq (no data-dependent shape); the terms equal the masked form's."""
    recipe.train.max_steps = 1
    task = FixedBatches(recipe, [range(0, 6)])
    fit(recipe, task)
    model = task.build_model().eval()
    batch = task.train.collate(0, range(0, 6))
    plain = task.train_step(model, batch)
    recipe.train.compile = True
    fixed = task.train_step(model, batch)
    for name, term in plain.items():
        torch.testing.assert_close(fixed[name].loss, term.loss)
        torch.testing.assert_close(fixed[name].metrics["acc"], term.metrics["acc"])
