"""Vision Transformer (Dosovitskiy et al., 2021) assembled from zoo.blocks.

Images are cut into patches by a strided convolution, a class token is prepended, learned
positions are added, and a pre-norm encoder runs over the sequence; the head reads the class
token (or the mean of the patch tokens). Layout and initialisation follow timm's
VisionTransformer so its checkpoints load through `zoo.convert.timm_vit`.

Shape key: B batch, C channels, P patch side, N patches, D model dim, K classes.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from zoo.blocks import Dropout, Encoder, LayerSpec, build_norm, resample_grid
from zoo.blocks.linear import Linear

POOLS = ("token", "avg")


class ViT(nn.Module):
    """images (B, C, H, W) in [0, 1] -> logits (B, K).

    The normalisation (`pixel_mean`, `pixel_std`) is a buffer of the model, so a checkpoint
    carries it and callers always feed plain [0, 1] pixels.

    Args:
        image_size: side of the training images; sets the position grid. Other sizes (multiples
            of `patch_size`) work: the positions are resampled bicubically, as timm does.
        patch_size: P. in_chans: C. num_classes: K. dim: D. encoder_layers: depth.
        num_heads: attention heads. ffn_dim: FFN hidden width.
        pool: "token" (the class token) or "avg" (mean of the patch tokens, the paper's GAP;
            the final norm then follows the pooling, as in timm).
        class_token: prepend a class token (required by pool="token").
        bias: biases in all the encoder's linear layers (timm's qkv_bias=False is not this).
        dropout: dropout after the position embedding, on residual branches and before the head.
        attn_dropout: dropout on attention weights.
        drop_path_rate: stochastic depth of the last layer (rising linearly from 0, timm's name).
        mean, std: per-channel normalisation applied to the input.
    """

    def __init__(
        self,
        *,
        image_size: int,
        patch_size: int,
        in_chans: int,
        num_classes: int,
        dim: int,
        encoder_layers: int,
        num_heads: int,
        ffn_dim: int,
        pool: str = "token",
        class_token: bool = True,
        bias: bool = True,
        dropout: float = 0.0,
        attn_dropout: float = 0.0,
        drop_path_rate: float = 0.0,
        mean: tuple[float, ...] = (0.5,),
        std: tuple[float, ...] = (0.5,),
    ) -> None:
        super().__init__()
        if pool not in POOLS:
            raise ValueError(f"unknown pool {pool!r}; choose from {POOLS}")
        if pool == "token" and not class_token:
            raise ValueError("pool='token' needs class_token=True")
        if image_size % patch_size:
            raise ValueError(f"patch_size {patch_size} does not divide image_size {image_size}")
        self.patch_size, self.pool = patch_size, pool
        self.grid = image_size // patch_size
        self.num_prefix = int(class_token)
        self.register_buffer("pixel_mean", _channel_stat(mean, in_chans))
        self.register_buffer("pixel_std", _channel_stat(std, in_chans))
        self.patch_embed = nn.Conv2d(in_chans, dim, kernel_size=patch_size, stride=patch_size)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim)) if class_token else None
        self.pos_embed = nn.Parameter(torch.zeros(1, self.num_prefix + self.grid**2, dim))
        self.pos_dropout = Dropout(dropout)
        spec = LayerSpec(
            dim,
            num_heads,
            ffn_dim,
            dropout=dropout,
            attn_dropout=attn_dropout,
            activation="gelu",
            norm_eps=1e-6,
            pre_norm=True,
            bias=bias,
        )
        # With average pooling the final norm moves after the pooling (timm's fc_norm).
        self.encoder = Encoder.uniform(
            encoder_layers, spec, drop_path_rate=drop_path_rate, final_norm=pool == "token"
        )
        self.head_norm = build_norm(spec.norm, dim, eps=spec.norm_eps) if pool == "avg" else None
        self.head_dropout = Dropout(dropout)
        self.head = Linear(dim, num_classes)
        self.reset_parameters()

    @torch.no_grad()
    def reset_parameters(self) -> None:
        """timm's ViT initialisation: truncated normal(0.02) for linear weights and positions."""
        nn.init.trunc_normal_(self.pos_embed, std=0.02)
        if self.cls_token is not None:
            nn.init.normal_(self.cls_token, std=1e-6)
        for module in self.modules():
            if isinstance(module, nn.Linear):
                nn.init.trunc_normal_(module.weight, std=0.02)
                if module.bias is not None:
                    nn.init.zeros_(module.bias)

    def no_weight_decay(self) -> set[str]:
        """Parameters the optimizer must not decay besides 1-D ones (timm's convention)."""
        return {"pos_embed", "cls_token"}

    def positions(self, grid: tuple[int, int]) -> Tensor:
        """The position table (1, prefix + gh * gw, D) for a patch grid, resampled if needed."""
        return resample_positions(self.pos_embed, self.num_prefix, grid)

    def tokens(self, images: Tensor) -> Tensor:
        """Normalised images (B, C, H, W) -> the encoder's input (B, prefix + N, D)."""
        x = self.patch_embed((images - self.pixel_mean) / self.pixel_std)  # (B, D, H/P, W/P)
        grid = (x.shape[-2], x.shape[-1])
        x = x.flatten(2).transpose(1, 2)  # (B, N, D)
        if self.cls_token is not None:
            x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1)
        return self.pos_dropout(x + self.positions(grid))

    def features(self, images: Tensor) -> Tensor:
        """The pooled, normalised representation (B, D) the head reads."""
        if self.pool == "token":
            # Only the class token leaves the last layer: the other positions' outputs would
            # be discarded (timm computes them; the logits are the same).
            return self.encoder(self.tokens(images), outputs=slice(0, 1))[:, 0]
        x = self.encoder(self.tokens(images))
        return self.head_norm(x[:, self.num_prefix :].mean(dim=1))

    def forward(self, images: Tensor) -> Tensor:
        return self.head(self.head_dropout(self.features(images)))


def resample_positions(pos_embed: Tensor, num_prefix: int, grid: tuple[int, int]) -> Tensor:
    """A (1, prefix + n, D) table resampled to a patch `grid`; the prefix rows stay as they are."""
    table = pos_embed[0]
    patch_rows = table[num_prefix:]
    resampled = resample_grid(patch_rows, grid)
    if resampled is patch_rows:
        return pos_embed
    return torch.cat([table[:num_prefix], resampled])[None]


def _channel_stat(values: tuple[float, ...], channels: int) -> Tensor:
    if len(values) not in (1, channels):
        raise ValueError(f"need 1 or {channels} normalisation values, got {len(values)}")
    return torch.tensor(values, dtype=torch.float32).expand(channels).reshape(channels, 1, 1).clone()
