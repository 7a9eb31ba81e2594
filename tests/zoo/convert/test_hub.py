"""zoo.convert.hub: offline (HF_HUB_OFFLINE, or no network) a hub name fails at once with the
one-line message instead of after the hub client's retries; never reaches the internet."""

from __future__ import annotations

import time

import pytest

from zoo.config import UserError
from zoo.convert.hf_bert import load_hf_bert
from zoo.convert.hub import hub_offline


def test_an_uncached_bert_hub_name_fails_at_once_offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert hub_offline()
    start = time.monotonic()
    with pytest.raises(UserError, match="'zoo-test/no-such-bert' .*offline and not in the cache"):
        load_hf_bert("zoo-test/no-such-bert")
    assert time.monotonic() - start < 5
