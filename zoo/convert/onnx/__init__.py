"""ONNX: zoo's models exported through torch.onnx, and run by ONNX Runtime.

    cache.py    the caches an exported step reads: past keys/values in, present out
    graphs.py   the modules exported: the translation encoder and decoder step, BERT, GPT's step
    export.py   export_translation, export_bert, export_vit, export_gpt (dynamic batch and lengths)
    runtime.py  OnnxSeq2Seq: the translation graphs under ONNX Runtime, decoded by zoo.decode

Nothing is imported here: export.py needs the onnx and onnxscript packages, runtime.py
onnxruntime (the `onnx` extra of pyproject.toml).
"""
