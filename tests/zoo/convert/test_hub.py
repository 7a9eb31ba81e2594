"""zoo.convert.hub: offline (HF_HUB_OFFLINE, or no network) a hub name fails at once with the
one-line message instead of after the hub client's retries; never reaches the internet."""

from __future__ import annotations

import huggingface_hub
import pytest

from zoo.config import UserError
from zoo.convert.hf_bert import load_hf_bert
from zoo.convert.hub import hub_offline


def test_an_uncached_bert_hub_name_fails_offline_without_trying_a_download(monkeypatch):
    """Offline, the hub client is asked for its cache only (`local_files_only`): it raises at once
    instead of retrying the network for about 50 s."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert hub_offline()
    asked = []
    real = huggingface_hub.snapshot_download
    monkeypatch.setattr(
        huggingface_hub, "snapshot_download", lambda *args, **kw: asked.append(kw) or real(*args, **kw)
    )
    with pytest.raises(UserError, match="'zoo-test/no-such-bert' .*offline and not in the cache"):
        load_hf_bert("zoo-test/no-such-bert")
    assert asked and all(k.get("local_files_only") is True for k in asked)


def test_a_name_that_reads_as_a_local_path_is_never_a_hub_name(monkeypatch, tmp_path):
    """runs/..., ./..., ../... and a name whose first folder exists here are local paths: a
    missing one is reported as missing, not looked for on the hub; org/name stays a hub name."""
    from zoo.convert.hf_bert import names_hf_model
    from zoo.convert.hub import is_hub_name

    monkeypatch.chdir(tmp_path)
    (tmp_path / "models").mkdir()
    for hub in ("bert-base-uncased", "google/bert_uncased_L-2_H-128_A-2", "zoo-test/no-such-bert"):
        assert is_hub_name(hub), hub
    for local in ("runs/bert-tiny-enwiki-52k", "./bert", "../bert", "models/bert", "/abs/bert", "~/bert"):
        assert not is_hub_name(local) and not names_hf_model(local), local
    asked = []
    monkeypatch.setattr(huggingface_hub, "snapshot_download", lambda *args, **kw: asked.append(args))
    with pytest.raises(UserError, match=r"^runs/no-such-bert: not a Hugging Face BERT directory"):
        load_hf_bert("runs/no-such-bert")
    assert asked == []
