"""The paper's initialisation, as in tensor2tensor and fairseq.

Linear weights Xavier-uniform (q, k and v projections each on their own block, so the fused
(3D, D) weight gets the same scale as three separate projections), biases zero, norms one and
zero; token embeddings keep N(0, D^-1/2) from TokenEmbedding, and an additive attention score
(zoo.blocks.attention_scores) its own initialisation.
"""

from __future__ import annotations

import torch
from torch import nn

from zoo.blocks.attention import MultiHeadAttention
from zoo.blocks.embeddings import TokenEmbedding


@torch.no_grad()
def init_transformer_(model: nn.Module) -> nn.Module:
    """Re-initialise every Linear, MultiHeadAttention, norm and TokenEmbedding of `model`."""
    qkv_sizes = {
        id(m.qkv_proj.weight): m.qkv_sizes for m in model.modules() if isinstance(m, MultiHeadAttention)
    }
    for module in model.modules():
        if isinstance(module, nn.Linear):
            sizes = qkv_sizes.get(id(module.weight))
            blocks = module.weight.split(sizes, dim=0) if sizes else [module.weight]
            for block in blocks:
                nn.init.xavier_uniform_(block)
        elif isinstance(module, TokenEmbedding):
            module.reset_parameters()
        elif isinstance(module, (nn.LayerNorm, nn.RMSNorm)) and module.weight is not None:
            nn.init.ones_(module.weight)
        if isinstance(module, (nn.Linear, nn.LayerNorm)) and module.bias is not None:
            nn.init.zeros_(module.bias)
    return model
