"""python -m tasks.vit.train [--config FILE] [--key.sub=value ...]: train a ViT classifier
(the same as `python -m zoo train vit`).

With no arguments it trains on scikit-learn's bundled handwritten digits (offline, a few
minutes on two CPU cores). The recipe is configs/vit/digits.yaml when run from a checkout; an
installed package has no configs/ folder and uses the schema's defaults, which are the same
recipe (a test keeps the two equal).
"""

from tasks.vit.spec import ViTSpec
from zoo.verbs.cli import run_verb


def main(argv: list[str] | None = None):
    return run_verb(ViTSpec(), "train", argv)


if __name__ == "__main__":
    main()
