"""tasks.bert.finetune.foreign: which head a Hugging Face directory holds, refused in one line
when it holds none."""

import json

import pytest

from tasks.bert.finetune.foreign import hf_head_of, recipe_for
from zoo.config import UserError


@pytest.mark.parametrize(
    ("architecture", "head"),
    [("BertForSequenceClassification", "classify"), ("BertForTokenClassification", "tag"),
     ("BertForQuestionAnswering", "span")],
)  # fmt: skip
def test_the_architecture_names_the_head(tmp_path, architecture, head):
    (tmp_path / "config.json").write_text(json.dumps({"architectures": [architecture]}))
    assert hf_head_of(tmp_path) == head


def test_a_zoo_run_is_not_a_hugging_face_directory(tmp_path):
    (tmp_path / "config.yaml").write_text("head: classify\n")
    assert hf_head_of(tmp_path) is None


def test_a_pretrained_encoder_or_a_bad_config_is_refused_naming_the_file(tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"architectures": ["BertForPreTraining"]}))
    with pytest.raises(UserError, match=rf"{config}: architectures=\['BertForPreTraining'\]: no fine-tuned"):
        hf_head_of(tmp_path)
    config.write_text("{not json")
    with pytest.raises(UserError, match=f"{config}: not a Hugging Face config"):
        hf_head_of(tmp_path)


def test_without_a_recipe_the_heads_built_in_set_and_with_one_its_data(tmp_path):
    assert recipe_for("tag", "", "").head == "tag"
    recipe = tmp_path / "sst2.yaml"
    recipe.write_text("head: classify\ndata:\n  train: sst2/train.tsv.gz\n")
    cfg = recipe_for("classify", str(recipe), "/data")
    assert (cfg.data.train, cfg.data.data_dir) == ("sst2/train.tsv.gz", "/data")
    with pytest.raises(UserError, match="a recipe of the classify head, the model is a span model"):
        recipe_for("span", str(recipe), "")
