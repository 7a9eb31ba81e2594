"""When a generated row ends: it just produced EOS, its new text contains a stop string, or it
holds as many new ids as it may (max_new_tokens, or the end of the model's context). The id
that ends a row is kept in it, as Hugging Face keeps the EOS and the ids of a stop string.

Shape key: R rows (or beam candidates), t new ids each.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor


def new_token_limits(prompt_lengths: list[int], max_new_tokens: int, context: int) -> list[int]:
    """Each prompt's most new ids: max_new_tokens, or fewer where the context ends first."""
    return [min(max_new_tokens, context - length) for length in prompt_lengths]


class Stopping:
    """The end rules above for one generation run.

    Args:
        eos_id: the end-of-sequence id (None = none).
        stop_strings: texts that end a row once its new text contains one.
        decode: ids -> text (needed with stop strings).
    """

    def __init__(
        self, eos_id: int | None, stop_strings: list[str], decode: Callable[[list[int]], str] | None
    ) -> None:
        if stop_strings and decode is None:
            raise ValueError("stop strings need a decode function (ids -> text)")
        self.eos_id, self.stop_strings, self.decode = eos_id, stop_strings, decode

    def ended(self, generated: Tensor, limits: Tensor) -> Tensor:
        """(R,) bool: the rows that end with their last id.

        Args:
            generated: (R, t) each row's new ids, the one just chosen last.
            limits: (R,) the most new ids each row may have.
        """
        ended = limits <= generated.shape[1]
        if self.eos_id is not None:
            ended |= generated[:, -1] == self.eos_id
        if self.stop_strings:
            # The whole new text each time: a stop string may span many ids, and an id may end
            # inside a character that only the next one completes.
            texts = [self.decode(ids) for ids in generated.tolist()]
            hits = [any(stop in text for stop in self.stop_strings) for text in texts]
            ended |= torch.tensor(hits, device=generated.device)
        return ended
