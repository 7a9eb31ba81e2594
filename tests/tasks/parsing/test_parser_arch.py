"""The parsers are Transformers: model.arch=rnn (the translation task's recurrent baseline,
which the parsers' model options inherit) is refused by name, not silently ignored."""

import pytest

from tasks.parsing.config import ParsingConfig
from zoo.config import ConfigError, load_config


@pytest.mark.parametrize("kind", ["seq2seq", "chart"])
def test_a_recurrent_arch_is_refused_naming_the_key(kind):
    with pytest.raises(ConfigError, match="key 'model.arch'"):
        load_config(ParsingConfig, overrides=[f"model.kind={kind}", "model.arch=rnn"])
