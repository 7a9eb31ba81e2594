"""One config path: YAML recipe -> typed dataclasses, strictly checked, with dotted overrides.

Each task declares its config as nested dataclasses. OmegaConf structured configs do the merging
and type checking: an unknown key or a value of the wrong type is an error that names the key
(and the file). Command-line overrides use dotted keys: `--optim.lr=3e-4` or `optim.lr=3e-4`.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path
from typing import Any, TypeVar

import yaml
from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

T = TypeVar("T")


class ConfigError(ValueError):
    """A recipe or override that does not fit the config schema."""


class Invalid(ConfigError):
    """Raised by a config dataclass's `check()`: `key` is the field's name inside that section;
    load_config reports it with the section's dotted prefix."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"key '{key}': {message}")
        self.key, self.message = key, message


class UserError(RuntimeError):
    """Bad input from the user (config, files, data): reported in one line, without traceback."""


def load_config(
    schema: type[T],
    path: str | Path | None = None,
    overrides: list[str] | None = None,
    *,
    base: T | None = None,
) -> T:
    """Build a `schema` instance from its defaults (or `base`, a saved config), a YAML file and
    dotted overrides, in order."""
    merged = OmegaConf.structured(schema if base is None else base)
    if path is not None:
        merged = _merge(merged, _load_yaml(Path(path)), f"{path}")
    if overrides:
        for item in overrides:
            _check_text(item)
        dotlist = [o[2:] if o.startswith("--") else o for o in overrides]
        for item in dotlist:
            if "=" not in item:
                raise ConfigError(f"override {item!r} must look like key.sub=value")
        dotlist = [_empty_string(merged, item) for item in dotlist]
        try:
            override_cfg = OmegaConf.from_dotlist(dotlist)
        except OmegaConfBaseException as err:
            raise ConfigError(f"bad override: {_message(err)}") from None
        except yaml.YAMLError:
            raise ConfigError(_bad_override_yaml(dotlist)) from None
        merged = _merge(merged, override_cfg, "command line")
    try:
        cfg = OmegaConf.to_object(merged)
    except OmegaConfBaseException as err:
        raise ConfigError(f"config: {_message(err)}") from None
    check_values(cfg)
    return cfg


def _empty_string(merged: Any, item: str) -> str:
    """`key=` as YAML's empty string where the key holds a string (`--model.init=` for "no
    pretrained weights"): OmegaConf reads an empty value as null, which a string key refuses.
    A key holding anything else keeps the null."""
    key, _, value = item.partition("=")
    if value or not isinstance(OmegaConf.select(merged, key, default=None), str):
        return item
    return f"{key}=''"


def check_values(cfg: Any, prefix: str = "") -> None:
    """Call `check()` on every config section that defines one (values the model or data
    cannot be built with), naming the offending key with its full dotted path."""
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        if dataclasses.is_dataclass(value):
            check_values(value, f"{prefix}{f.name}.")
    check = getattr(cfg, "check", None)
    if check is not None:
        try:
            check()
        except Invalid as err:
            raise ConfigError(f"key '{prefix}{err.key}': {err.message}") from None


def _load_yaml(path: Path) -> Any:
    if path.is_dir():
        raise ConfigError(f"config {path}: a directory; --config takes a YAML file")
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise ConfigError(
            f"{path}, line {line}: not UTF-8 text (byte 0x{raw[err.start]:02x}); save the file as UTF-8"
        ) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: not valid YAML{_yaml_where(err)}: {_yaml_problem(err)}") from None
    if data is None:
        return OmegaConf.create({})
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of keys, not {type(data).__name__}")
    return OmegaConf.create(data)


def _check_text(argument: str) -> None:
    """A command-line argument holding bytes that are not UTF-8 (Python keeps them as lone
    surrogates) cannot be a value: name the argument rather than fail deep in the YAML writer."""
    try:
        argument.encode("utf-8")
    except UnicodeEncodeError:
        shown = os.fsencode(argument).decode("utf-8", errors="backslashreplace")
        raise ConfigError(f"command-line argument '{shown}': not UTF-8 text") from None


def _bad_override_yaml(dotlist: list[str]) -> str:
    """The message for the first override whose value OmegaConf cannot read as YAML."""
    for item in dotlist:
        key, _, value = item.partition("=")
        try:
            OmegaConf.from_dotlist([item])
        except yaml.YAMLError as err:
            return f"key '{key}': {value!r} is not valid YAML ({_yaml_problem(err)})"
        except OmegaConfBaseException:
            continue
    return "an override is not valid YAML"


def _yaml_problem(err: yaml.YAMLError) -> str:
    """PyYAML's reason in one line, without the excerpt of the text it points at."""
    problem = getattr(err, "problem", None) or str(err).splitlines()[0]
    return " ".join(str(problem).split())


def _yaml_where(err: yaml.YAMLError) -> str:
    """` at line L, column C` (1-based) where PyYAML stopped, plus where the construct it was
    reading began (an unclosed `[` is found only at the end of the file)."""
    mark = getattr(err, "problem_mark", None)
    if mark is None:
        return ""
    where = f" at line {mark.line + 1}, column {mark.column + 1}"
    context, start = getattr(err, "context", None), getattr(err, "context_mark", None)
    if context and start is not None and (start.line, start.column) != (mark.line, mark.column):
        where += f" ({' '.join(context.split())} from line {start.line + 1}, column {start.column + 1})"
    return where


def _merge(base: Any, other: Any, source: str) -> Any:
    try:
        return OmegaConf.merge(base, other)
    except (OmegaConfBaseException, TypeError) as err:
        found = _misshapen(
            OmegaConf.to_container(base, resolve=False), OmegaConf.to_container(other, resolve=False)
        )
        if found is not None:
            raise ConfigError(f"{source}: {found}") from None
        if isinstance(err, TypeError):
            raise
        raise ConfigError(f"{source}: {_message(err)}") from None


def _misshapen(base: Any, other: Any, prefix: str = "") -> str | None:
    """The first key of `other` whose value is a scalar or list where `base` has a section, or
    a mapping where it has a list: OmegaConf's own message names the types, not the key."""
    if not isinstance(base, dict) or not isinstance(other, dict):
        return None
    for key, value in other.items():
        if key not in base:
            continue
        known, name = base[key], f"{prefix}{key}"
        if isinstance(value, str) and "${" in value:
            continue
        if isinstance(known, dict) and value is not None and not isinstance(value, dict):
            return f"key '{name}': expected a section (mapping), not {_shown(value)}"
        if isinstance(known, list) and isinstance(value, dict):
            return f"key '{name}': expected a list, not {_shown(value)}"
        found = _misshapen(known, value, f"{name}.")
        if found is not None:
            return found
    return None


def _shown(value: Any) -> str:
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _message(err: OmegaConfBaseException) -> str:
    key = getattr(err, "full_key", None)
    text = str(err).splitlines()[0]
    return f"key '{key}': {text}" if key else text


def to_yaml(cfg: Any) -> str:
    return OmegaConf.to_yaml(OmegaConf.structured(cfg))


def to_dict(cfg: Any) -> dict:
    return OmegaConf.to_container(OmegaConf.structured(cfg), resolve=True)


def from_yaml(schema: type[T], text: str) -> T:
    """Rebuild a config saved with a checkpoint."""
    return OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(schema), OmegaConf.create(text)))


def describe(schema: type, prefix: str = "", instance: Any = None) -> list[str]:
    """One line per leaf option: dotted key, type, default and the field's `help` metadata.

    Defaults are read from `instance` (a fresh `schema()` if None), so a section whose parent
    overrides its defaults (a task's `train` section) shows the task's values.
    """
    lines = []
    instance = schema() if instance is None else instance
    for f in dataclasses.fields(schema):
        value = getattr(instance, f.name)
        key = f"{prefix}{f.name}"
        if dataclasses.is_dataclass(value):
            lines.extend(describe(type(value), key + ".", value))
            continue
        type_name = getattr(f.type, "__name__", str(f.type))
        help_text = f.metadata.get("help", "")
        lines.append(f"  --{key}={value!r}  ({type_name})  {help_text}".rstrip())
    return lines


def parse_cli(
    schema: type[T],
    argv: list[str] | None,
    *,
    default_config: str | Path | None,
    description: str,
    positional: tuple[str, ...] = (),
    recipe: bool = True,
) -> T:
    """`[POSITIONAL ...] [--config FILE] [--key.sub=value | --key.sub value | --flag ...]` -> config.

    `positional` names the keys that leading bare arguments fill (a run directory, say); a
    bare `--flag` means `--flag=true`; hyphens in option names read as underscores. `--help`
    lists every option with its default and help. `recipe=False`: options, not a recipe, so
    there is no `--config` file.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    if "-h" in argv or "--help" in argv:
        _print_help(schema, description, positional, recipe, default_config)
        raise SystemExit(0)
    path = default_config
    rest: list[str] = []
    verbatim = {f"--{f.name}" for f in dataclasses.fields(schema) if f.metadata.get("verbatim")}
    raw: dict[str, str] = {}
    fill = list(positional)
    i = 0
    while i < len(argv):
        arg = argv[i]
        following = argv[i + 1] if i + 1 < len(argv) else None
        if recipe and arg in ("--config", "-c"):
            if following is None:
                raise ConfigError("--config needs a file name")
            path, i = following, i + 2
            continue
        if recipe and arg.startswith("--config="):
            path = arg.split("=", 1)[1]
        elif not arg.startswith("-") and "=" not in arg and fill:
            rest.append(f"{fill.pop(0)}={arg}")
        elif _key(arg.partition("=")[0]) in verbatim:
            name, value, used = _verbatim(arg, following)
            raw[name], i = value, i + used
        elif arg.startswith("--") and "=" not in arg:
            if following is not None and not following.startswith("--"):
                rest.append(f"{_key(arg)}={following}")
                i += 1
            else:
                rest.append(f"{_key(arg)}=true")
        else:
            key, _, value = arg.partition("=")
            rest.append(f"{_key(key)}={value}" if key.startswith("--") else arg)
        i += 1
    cfg = load_config(schema, path, rest)
    if raw:
        cfg = dataclasses.replace(cfg, **raw)
        check_values(cfg)
    return cfg


def _verbatim(arg: str, following: str | None) -> tuple[str, str, int]:
    """`--key=value` or `--key value` of a field marked verbatim (free text, an input sentence):
    its name, the value as typed (never read as YAML or ${interpolation}), the arguments after
    `arg` it used."""
    key, equals, value = arg.partition("=")
    if equals:
        return _key(key)[2:], value, 0
    if following is None or following.startswith("--"):
        raise ConfigError(f"{key} needs a value ({key}=... for one that starts with --)")
    return _key(key)[2:], following, 1


def _print_help(
    schema: type,
    description: str,
    positional: tuple[str, ...],
    recipe: bool,
    default_config: str | Path | None,
) -> None:
    names = " ".join(k.upper() for k in positional)
    print(description)
    config = "[--config FILE] " if recipe else ""
    print(f"\nusage: {names + ' ' if names else ''}{config}[--key=value ...]")
    if recipe:
        print(f"  --config  recipe YAML (default: {default_config or 'none: the built-in defaults'})")
    if positional:
        print(f"  {names}: the same as --{'=... --'.join(positional)}=...")
    print("\noptions:")
    print("\n".join(describe(schema)))


def _key(option: str) -> str:
    """`--beam-size` -> `--beam_size`: option names accept hyphens (no field has one)."""
    return "--" + option[2:].replace("-", "_")
