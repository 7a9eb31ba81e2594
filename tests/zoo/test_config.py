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


def test_an_empty_value_is_the_empty_string_for_a_string_key_only():
    assert load_config(Outer, None, ["--optim.name="]).optim.name == ""
    with pytest.raises(ConfigError, match="steps"):  # an int key still refuses the null
        load_config(Outer, None, ["--steps="])


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


# Bad input through the real CLI: exit 2 and one line on stderr that names the key or file.
def run_gpt_train(tmp_path, *args):
    from tests.faults.clirun import assert_refused, run

    result = run("zoo", "train", "gpt", "--train.max_steps=1", "--train.threads=1",
                 f"--train.out_dir={tmp_path / 'run'}", *args)  # fmt: skip
    assert_refused(result)
    assert not (tmp_path / "run").exists()
    return result.stderr.strip()


@pytest.mark.parametrize("value", ["[0.9", '["a"', "{a: 1", "@x"])
def test_an_override_that_is_not_yaml_names_the_key_in_one_line(value):
    with pytest.raises(ConfigError) as info:
        load_config(Outer, None, ["steps=3", f"--optim.betas={value}"])
    message = str(info.value)
    assert message.startswith(f"key 'optim.betas': {value!r} is not valid YAML (")
    assert "\n" not in message


def test_an_override_that_is_not_yaml_exits_2_from_the_cli(tmp_path):
    err = run_gpt_train(tmp_path, "--optim.betas=[0.9")
    assert err == "error: key 'optim.betas': '[0.9' is not valid YAML (did not find expected ',' or ']')"


def test_a_yaml_syntax_error_is_one_line_with_line_and_column(tmp_path):
    path = write(tmp_path, "steps: 3\noptim:\n  betas: [0.9 0.8\n")
    with pytest.raises(ConfigError) as info:
        load_config(Outer, path)
    assert str(info.value) == (
        f"{path}: not valid YAML at line 4, column 1 (while parsing a flow sequence from line 3, "
        "column 10): expected ',' or ']', but got '<stream end>'"
    )
    with pytest.raises(ConfigError, match=r"recipe.yaml: not valid YAML at line 1, column 5: mapping values"):
        load_config(Outer, write(tmp_path, "a: b: c\n"))


def test_a_yaml_syntax_error_exits_2_from_the_cli(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("optim:\n  betas: [0.9 0.8\n")
    err = run_gpt_train(tmp_path, f"--config={path}")
    assert err.startswith(f"error: {path}: not valid YAML at line 3, column 1 (")


def test_a_section_given_a_scalar_or_list_names_the_key(tmp_path):
    @dataclass
    class Deep:
        outer: Outer = field(default_factory=Outer)

    section = r"expected a section \(mapping\), not"
    with pytest.raises(ConfigError, match=rf"recipe.yaml: key 'optim': {section} 5$"):
        load_config(Outer, write(tmp_path, "optim: 5\n"))
    with pytest.raises(ConfigError, match=rf"key 'outer.optim': {section} \[1, 2\]$"):
        load_config(Deep, write(tmp_path, "outer:\n  optim: [1, 2]\n"))
    with pytest.raises(ConfigError, match=rf"^command line: key 'optim': {section} 'x'$"):
        load_config(Outer, None, ["optim=x"])
    with pytest.raises(ConfigError, match=r"key 'optim.betas': expected a list, not \{'a': 1\}$"):
        load_config(Outer, write(tmp_path, "optim:\n  betas: {a: 1}\n"))


def test_a_section_given_a_scalar_exits_2_from_the_cli(tmp_path):
    path = tmp_path / "t5.yaml"
    path.write_text("train: 5\n")
    err = run_gpt_train(tmp_path, f"--config={path}")
    assert err == f"error: {path}: key 'train': expected a section (mapping), not 5"
