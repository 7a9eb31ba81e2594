"""zoo's BERT encoder as a CTranslate2 `Encoder` model directory, through CTranslate2's own converter.

CTranslate2 runs BERT as a TransformerEncoderModelSpec (post-norm layers with GELU, the
embeddings' LayerNorm, word and token-type embeddings added, the tanh pooler), which its
Transformers converter (`ctranslate2.converters.TransformersConverter`, BertLoader) builds from a
Hugging Face `BertModel` directory. `write_ctranslate2_bert` writes that directory with
zoo.convert.hf_bert (the encoder and the pooler; the pretraining heads have no counterpart in the
engine) into a temporary folder and converts it, so the mapping onto the engine's weights is
CTranslate2's own. Then

    encoder = ctranslate2.Encoder(OUT, compute_type="int8")
    output = encoder.forward_batch(rows, token_type_ids=types)  # lists of ids, rows of any lengths

gives `output.last_hidden_state` (B, T, D), equal to `Bert.encode` over the rows right-padded at
each row's real positions (what lies past a row's length is the engine's), and
`output.pooler_output` (B, D), equal to `Bert.pool` (tests/zoo/convert/test_ctranslate2_bert.py).
Positions count from 0 in every row; token types default to 0.

The converter reads the directory with transformers: both it and ctranslate2 are optional peers,
imported only when a directory is written.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from zoo.config import UserError
from zoo.convert.hf_bert import LoadedBert, config_to_hf, state_to_hf, write_hf_files

ENCODER_PREFIX = "bert."  # Hugging Face BertForPreTraining's keys of the encoder and pooler


def _converter(directory: Path):
    """CTranslate2's converter of the Hugging Face directory, or a one-line refusal saying what to
    install."""
    try:
        import transformers  # noqa: F401  (the converter reads the directory with it)
        from ctranslate2.converters import TransformersConverter
    except ImportError as err:
        raise UserError(
            f"a CTranslate2 BERT needs ctranslate2 and transformers (pip install ctranslate2 "
            f"transformers): {err}"
        ) from None
    return TransformersConverter(str(directory))


def write_ctranslate2_bert(loaded: LoadedBert, output: Path, *, quantization: str | None = None) -> None:
    """Write `loaded`'s encoder and pooler as a CTranslate2 Encoder directory (model.bin,
    config.json, vocabulary.json) into `output` (created if absent; the files must not be there
    yet; staging is the caller's, as for zoo.convert.ctranslate2.write_ctranslate2).

    The vocabulary is the tokenizer's pieces in id order, padded by the converter with
    "<extra_id_N>" up to the model's embeddings; the engine also takes ids directly.

    Args:
        quantization: weight type stored on disk (None = float32; int8, float16, bfloat16, ...;
            the engine can still convert at load time with `compute_type`).

    Raises:
        UserError: without the ctranslate2 or the transformers package.
    """
    model, output = loaded.model, Path(output)
    hf_config = {
        **config_to_hf(loaded.config, model.vocab_size, model.pad_id),
        "architectures": ["BertModel"],
        # the type the converter loads the weights in; without it, it asks for torch_dtype, which
        # transformers warns is deprecated
        "dtype": "float32",
    }
    encoder = {
        key.removeprefix(ENCODER_PREFIX): value
        for key, value in state_to_hf(model.state_dict()).items()
        if key.startswith(ENCODER_PREFIX)
    }
    with tempfile.TemporaryDirectory() as tmp:
        hf, converted = Path(tmp) / "hf", Path(tmp) / "ct2"
        converter = _converter(hf)
        write_hf_files(hf, hf_config, encoder, loaded.tokenizer, loaded.config.max_len)
        converter.convert(str(converted), quantization=quantization)
        output.mkdir(parents=True, exist_ok=True)
        for file in converted.iterdir():
            shutil.move(file, output / file.name)
