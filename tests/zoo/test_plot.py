import matplotlib.image
import pytest
import torch

from zoo.models import ModelConfig, build_model
from zoo.plot import DPI, figure_size, plot_cross_attention

BOS = 2


def tiny(layers: int, heads: int) -> torch.nn.Module:
    torch.manual_seed(0)
    cfg = ModelConfig(
        encoder_layers=1, decoder_layers=layers, dim=16, ffn_dim=32, num_heads=heads, dropout=0.0, max_len=32
    )
    return build_model(cfg, 12, 12, 0).eval()


@pytest.mark.parametrize("layers, heads", [(2, 4), (1, 2)])
def test_png_has_one_panel_per_layer_and_head(tmp_path, layers, heads):
    model = tiny(layers, heads)
    src, hyp = torch.tensor([5, 6, 7, 8, 9, 3]), torch.tensor([BOS, 10, 11, 4])
    path = tmp_path / "attention.png"
    weights = plot_cross_attention(
        model, src, hyp, ["a", "b", "c", "d", "e", "</s>"], ["x", "y", "z", "</s>"], path
    )
    width, height = figure_size(layers, heads, src_len=6, tgt_len=4)
    assert matplotlib.image.imread(path).shape[:2] == (round(height * DPI), round(width * DPI))
    assert weights.shape == (layers, heads, 4, 6)
    torch.testing.assert_close(weights.sum(-1), torch.ones(layers, heads, 4))  # a distribution per row


def test_label_count_must_match(tmp_path):
    with pytest.raises(ValueError, match="labels"):
        plot_cross_attention(
            tiny(1, 2), torch.tensor([5, 6]), torch.tensor([BOS, 7]), ["a"], ["x", "y"], tmp_path / "x.png"
        )
