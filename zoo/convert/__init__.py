"""Every foreign format in one place, outside the model files.

    keys.py         the shared machinery: rename tables both ways, q/k/v fuse and split, strict loading
    hf_bert.py      Hugging Face BERT: state dicts, config.json, whole directories and the tokenizer
    hub.py          Hugging Face hub snapshots (downloads)
    timm_vit.py     timm VisionTransformer checkpoints and models
    ctranslate2.py  CTranslate2 model directories of the encoder-decoder Transformer
    ctranslate2_bert.py  a CTranslate2 Encoder directory of BERT, through CTranslate2's own converter
    onnx/           ONNX graphs through torch.onnx (translation, BERT, ViT, GPT) and ONNX Runtime

Only `keys` is imported here; a format module is imported by name where it is used, so that
`import zoo.convert` needs none of the peers' packages.
"""

from zoo.convert.keys import FUSED, QKV, RenameTable, fuse_qkv, load_strict, rename, rename_key, split_qkv

__all__ = ["FUSED", "QKV", "RenameTable", "fuse_qkv", "load_strict", "rename", "rename_key", "split_qkv"]
