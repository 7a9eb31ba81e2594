import pytest

from zoo.config import UserError
from zoo.models.checks import check_vocabulary


def test_a_tokenizer_fits_a_model_with_as_many_embeddings_or_more():
    check_vocabulary("run", 100, 100)
    check_vocabulary("run", 90, 100, pad_ids=(0, 0))


@pytest.mark.parametrize(
    ("tokens", "pad_ids", "message"),
    [
        (1_001, None, "run: the tokenizer has 1,001 tokens, the model's vocabulary only 1,000: they do not"),
        (1_000, (0, 1), r"run: the tokenizer has \[PAD\] 0, the model's \[PAD\] 1: they do not"),
        (1_001, (0, 1), r"1,001 tokens, the model.s vocabulary only 1,000 and \[PAD\] 0, the model.s"),
    ],
)
def test_a_tokenizer_that_does_not_fit_is_one_line_saying_why(tokens, pad_ids, message):
    with pytest.raises(UserError, match=message) as error:
        check_vocabulary("run", tokens, 1_000, pad_ids=pad_ids)
    assert "\n" not in str(error.value)
