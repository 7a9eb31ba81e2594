"""One config path: strict YAML -> dataclasses, dotted overrides, readable errors."""

from dataclasses import dataclass, field

import pytest

from zoo.config import ConfigError, from_yaml, load_config, parse_cli, to_yaml


@dataclass
class Inner:
    lr: float = 1e-3
    name: str = "adam"
    betas: list[float] = field(default_factory=lambda: [0.9, 0.98])


@dataclass
class Outer:
    steps: int = 10
    optim: Inner = field(default_factory=Inner)


def write(tmp_path, text):
    path = tmp_path / "recipe.yaml"
    path.write_text(text)
    return path


def test_yaml_and_overrides_merge_in_order(tmp_path):
    path = write(tmp_path, "steps: 20\noptim:\n  lr: 0.5\n")
    cfg = load_config(Outer, path, ["--optim.lr=0.25", "optim.name=sgd"])
    assert cfg == Outer(steps=20, optim=Inner(lr=0.25, name="sgd"))
    assert isinstance(cfg.optim, Inner)


def test_unknown_key_in_file_names_key_and_file(tmp_path):
    path = write(tmp_path, "optim:\n  lrr: 0.5\n")
    with pytest.raises(ConfigError, match=r"recipe.yaml.*optim\.lrr"):
        load_config(Outer, path)


def test_unknown_override_names_key():
    with pytest.raises(ConfigError, match=r"command line.*optim\.momentum"):
        load_config(Outer, None, ["--optim.momentum=0.9"])


def test_wrong_type_names_key(tmp_path):
    path = write(tmp_path, "steps: many\n")
    with pytest.raises(ConfigError, match=r"'steps'.*many"):
        load_config(Outer, path)
    with pytest.raises(ConfigError, match=r"optim\.lr"):
        load_config(Outer, None, ["optim.lr=fast"])


def test_malformed_yaml_and_missing_file_name_the_file(tmp_path):
    with pytest.raises(ConfigError, match="recipe.yaml: not valid YAML"):
        load_config(Outer, write(tmp_path, "steps: [1,\n"))
    with pytest.raises(ConfigError, match="not found: .*nope.yaml"):
        load_config(Outer, tmp_path / "nope.yaml")
    with pytest.raises(ConfigError, match="key.sub=value"):
        load_config(Outer, None, ["--steps"])


def test_saved_config_round_trips():
    cfg = load_config(Outer, None, ["steps=3"])
    assert from_yaml(Outer, to_yaml(cfg)) == cfg


def test_help_lists_every_option(capsys):
    with pytest.raises(SystemExit) as exit_info:
        parse_cli(Outer, ["--help"], default_config=None, description="demo")
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert all(f"--{key}=" in out for key in ("steps", "optim.lr", "optim.name", "optim.betas"))


def test_cli_takes_positionals_spaced_values_and_bare_flags():
    from dataclasses import dataclass

    @dataclass
    class Verb:
        run: str = ""
        split: str = "valid"
        pretty: bool = False
        beam: int = 4

    cfg = parse_cli(
        Verb,
        ["runs/x", "--split", "test", "--pretty", "--beam=21"],
        default_config=None,
        description="",
        positional=("run",),
    )
    assert (cfg.run, cfg.split, cfg.pretty, cfg.beam) == ("runs/x", "test", True, 21)


def test_cli_option_names_accept_hyphens():
    from dataclasses import dataclass

    @dataclass
    class Verb:
        beam_size: int = 4
        max_len_b: int = 50

    cfg = parse_cli(Verb, ["--beam-size", "21", "--max-len-b=300"], default_config=None, description="")
    assert (cfg.beam_size, cfg.max_len_b) == (21, 300)
    with pytest.raises(ConfigError, match="beam"):
        parse_cli(Verb, ["--beam", "wide"], default_config=None, description="")


@pytest.mark.parametrize(
    "text", ["a b: c, [d]", "[1, 2]", "null", "true", '"quoted" ${x}', "--dashes", "", "3"]
)
def test_verbatim_options_are_taken_as_typed(text):
    @dataclass
    class Verb:
        text: str = field(default="", metadata={"verbatim": True})
        beam: int = 4

    for argv in (["--text", text], [f"--text={text}"]):
        if argv[0] == "--text" and text.startswith("--"):
            with pytest.raises(ConfigError, match="--text="):  # the spaced form reads it as an option
                parse_cli(Verb, [*argv, "--beam=2"], default_config=None, description="")
            continue
        cfg = parse_cli(Verb, [*argv, "--beam=2"], default_config=None, description="")
        assert (cfg.text, cfg.beam) == (text, 2)


def test_section_checks_name_the_full_key():
    from dataclasses import dataclass, field

    from zoo.config import Invalid

    @dataclass
    class Model:
        dim: int = 8
        num_heads: int = 2

        def check(self):
            if self.dim % self.num_heads:
                raise Invalid("num_heads", f"must divide dim ({self.dim})")

    @dataclass
    class Recipe:
        model: Model = field(default_factory=Model)

    assert load_config(Recipe, None, ["model.num_heads=4"]).model.num_heads == 4
    with pytest.raises(ConfigError, match=r"key 'model.num_heads': must divide dim \(8\)"):
        load_config(Recipe, None, ["model.num_heads=3"])
