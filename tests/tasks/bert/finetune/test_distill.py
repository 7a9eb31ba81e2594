"""Distillation for the classify head: the loss is Hinton et al.'s blend (against a brute-force
sum), the teacher's logits line up with the training examples, a student trained on the teacher
alone learns what the teacher says (even against the gold labels), augmented copies are masked
n-grams of their texts that only the teacher labels, and a teacher that cannot teach is refused
in one line."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from tasks.bert.finetune import heads
from tasks.bert.finetune.augment import NO_LABEL, augmented
from tasks.bert.finetune.config import DistillConfig, FinetuneConfig
from tasks.bert.finetune.data import IGNORE
from tasks.bert.finetune.distill import distilled_loss
from tasks.bert.finetune.readers import Example
from tasks.bert.finetune.splits import label_set, read_split
from tasks.bert.finetune.task import TEACHER_FILE, FinetuneTask, teacher_logits
from tests.tasks.bert.finetune.conftest import tiny_config
from tests.tasks.bert.finetune.test_finetune_task import OVERFIT, _write
from zoo.config import ConfigError, UserError, load_config
from zoo.train import RunContext, evaluation, fit


def test_the_loss_blends_cross_entropy_and_the_softened_kl_as_hinton_et_al():
    torch.manual_seed(0)
    logits, teacher, gold = torch.randn(5, 3), torch.randn(5, 3), torch.tensor([0, 2, 1, 1, 0])
    alpha, t = 0.3, 2.0

    def softmax(row: list[float]) -> list[float]:
        exps = [math.exp(x / t) for x in row]
        return [e / sum(exps) for e in exps]

    hard = sum(-math.log(math.exp(s[g]) / sum(math.exp(x) for x in s))
               for s, g in zip(logits.tolist(), gold.tolist()))  # fmt: skip
    kl = sum(p * math.log(p / q) for s, r in zip(logits.tolist(), teacher.tolist())
             for p, q in zip(softmax(r), softmax(s)))  # fmt: skip
    loss, found_kl = distilled_loss(logits, teacher, gold, DistillConfig(alpha=alpha, temperature=t))
    assert found_kl.item() == pytest.approx(kl, rel=1e-5)
    assert loss.item() == pytest.approx((1 - alpha) * hard + alpha * t * t * kl, rel=1e-5)
    same = teacher.clone().requires_grad_()
    distilled_loss(same, teacher, gold, DistillConfig(alpha=1.0, temperature=t))[0].backward()
    assert same.grad.abs().max() < 1e-6  # the teacher's own logits are the soft term's minimum


@pytest.fixture(scope="module")
def teacher(tmp_path_factory) -> tuple[Path, FinetuneConfig]:
    """A tiny classifier that has memorised the built-in training sentences."""
    cfg = tiny_config(
        "classify", str(tmp_path_factory.mktemp("teacher") / "run"), *OVERFIT, "--train.max_steps=300"
    )
    fit(cfg, FinetuneTask(cfg))
    return Path(cfg.train.out_dir), cfg


def _context(run_dir: Path) -> RunContext:
    return RunContext(rank=0, world_size=1, local_rank=0, device=torch.device("cpu"), run_dir=run_dir)


def _student(tmp_path: Path, teacher_run: Path, *extra: str) -> FinetuneConfig:
    return tiny_config(
        "classify", str(tmp_path / "student"), *OVERFIT, f"--distill.teacher={teacher_run}", *extra
    )


def test_a_student_learns_its_teachers_answers_even_against_the_gold_labels(teacher, tmp_path):
    teacher_run, teacher_cfg = teacher
    cfg = _student(tmp_path, teacher_run, "--distill.alpha=1.0", "--train.max_steps=300")
    train = read_split(cfg, "train")
    labels = label_set(cfg, train)
    run_dir = Path(cfg.train.out_dir)
    run_dir.mkdir(parents=True)
    logits = teacher_logits(cfg, train, labels, _context(run_dir))
    gold = torch.tensor([labels.index(e.label) for e in train])
    assert (logits.argmax(-1) == gold).float().mean() >= 0.95  # one row per example, in order
    # The teacher turned against the gold labels, through the cache a resumed run reads.
    cached = torch.load(run_dir / TEACHER_FILE, weights_only=True)
    torch.save({**cached, "logits": -cached["logits"]}, run_dir / TEACHER_FILE)
    task = FinetuneTask(cfg)
    result = fit(cfg, task)
    with evaluation(result.model, "fp32") as model:
        guesses = torch.stack(heads.run(model, task.train, 64)).argmax(-1)
    assert (guesses == gold).float().mean() <= 0.05


def test_a_teacher_that_cannot_teach_is_refused_in_one_line(teacher, tmp_path):
    teacher_run, _ = teacher
    tagger = tiny_config("tag", str(tmp_path / "tagger"), "--train.max_steps=1")
    fit(tagger, FinetuneTask(tagger))
    _write(tmp_path / "train.tsv.gz", "sentence\tlabel\n" + "good film\t1\nbad film\t0\n" * 20)
    files = [f"--data.data_dir={tmp_path}", "--data.train=train.tsv.gz", "--data.dev_size=4"]
    sorted_labels = tiny_config("classify", str(tmp_path / "sorted"), *files, "--train.max_steps=1")
    fit(sorted_labels, FinetuneTask(sorted_labels))
    for run, student, message in (
        (tagger.train.out_dir, [], "a tag run; the teacher must classify"),
        (sorted_labels.train.out_dir, [*files, "--data.labels=['1','0']"],
         r"its labels \['0', '1'\] are not this run's \['1', '0'\]"),
    ):  # fmt: skip
        cfg = _student(tmp_path, Path(run), *student)
        train = read_split(cfg, "train")
        with pytest.raises(UserError, match=rf"^distill.teacher={run}: {message}$"):
            teacher_logits(cfg, train, label_set(cfg, train), _context(tmp_path))
    with pytest.raises(ConfigError, match="key 'distill.teacher': only for the classify head"):
        load_config(FinetuneConfig, None, ["head=tag", f"distill.teacher={teacher_run}"])
    with pytest.raises(ConfigError, match=r"key 'distill.alpha': must be in \[0, 1\]"):
        load_config(FinetuneConfig, None, ["distill.alpha=1.5"])


def test_augmented_copies_are_masked_n_grams_of_their_text_and_new():
    text = "the film number {} is a quiet and well made piece of work"
    examples = [Example((text.format(i),), "1") for i in range(50)] + [Example(("fine",), "0")]
    copies = augmented(examples, 4, seed=3, mask="[MASK]")
    assert copies == augmented(examples, 4, seed=3, mask="[MASK]")
    assert 100 <= len(copies) <= 4 * len(examples) and all(c.label == NO_LABEL for c in copies)
    assert len({c.texts for c in copies} | {e.texts for e in examples}) == len(copies) + len(examples)
    sources = [e.texts[0].split() for e in examples]
    masked = cut = 0
    for copy in copies:
        words = copy.texts[0].split()
        assert any(all(w in (source[s + k], "[MASK]") for k, w in enumerate(words))
                   for source in sources for s in range(len(source) - len(words) + 1)), copy  # fmt: skip
        masked += words.count("[MASK]")
        cut += len(words) < 12 and words != ["[MASK]"]  # not the copies of "fine"
    assert 0 < masked and 0 < cut < len(copies)  # both rules fire, neither always


def test_augmented_copies_are_labelled_by_the_teacher_alone(teacher, tmp_path):
    teacher_run, _ = teacher
    cfg = _student(tmp_path, teacher_run, "--distill.augment=2")
    task = FinetuneTask(cfg)
    run_dir = Path(cfg.train.out_dir)
    run_dir.mkdir(parents=True)
    task.setup(_context(run_dir))
    originals = len(read_split(cfg, "train"))
    assert originals < len(task.train) <= 3 * originals
    assert task.train.teacher.shape == (len(task.train), len(task.labels))
    assert all(label == IGNORE for label in task.train.labels[originals:])
    assert all(label != IGNORE for label in task.train.labels[:originals])
    with pytest.raises(ConfigError, match="key 'distill.augment': the copies are labelled by the teacher"):
        load_config(FinetuneConfig, None, ["distill.augment=2"])
