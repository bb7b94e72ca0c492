"""Settings (kgdb.config.Environment), the README's variable table, and the one CLI error
translation (kgdb.cli.errors) as main() and CliRunner both see it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from kgdb.cli import cli
from kgdb.cli.errors import run_cli
from kgdb.config import Environment, Settings, environment, kgdb_home
from kgdb.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]


def readme_variables() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Configuration\n"):]
    section = section[:section.index("\n## ", 1)] if "\n## " in section[1:] else section
    return re.findall(r"^\| `([A-Z0-9_]+)` \|", section, flags=re.M)


def test_readme_table_matches_the_settings_class() -> None:
    documented = readme_variables()
    assert len(documented) == len(set(documented)), "a variable is documented twice"
    assert set(documented) == set(Environment.model_fields)
    assert all(field.description for field in Environment.model_fields.values())


def test_every_variable_read_in_kgdb_is_declared() -> None:
    """No module reads os.environ for a KGDB_/NEO4J_/OPENAI_ name behind the class's back."""
    declared = set(Environment.model_fields)
    for path in (ROOT / "kgdb").rglob("*.py"):
        text = path.read_text()
        for name in re.findall(r"(?:environ\.get|getenv|environ\[)\(?\s*\"((?:KGDB|NEO4J|OPENAI)_\w+)",
                               text):
            assert name in declared, f"{path}: {name} is read but not declared in Environment"


def test_defaults_and_types(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in Environment.model_fields:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("KGDB_HOME", str(tmp_path))
    monkeypatch.setenv("KGDB_TIMEOUT", "12.5")
    monkeypatch.setenv("NEO4J_DATABASE", "")  # empty counts as unset
    settings = Settings.from_env()
    assert settings.timeout_s == 12.5 and settings.graph == "kgdb" and settings.embedded
    assert settings.database is None and settings.home == tmp_path == kgdb_home()
    monkeypatch.setenv("NEO4J_URI", "bolt://h:1")
    assert Settings.from_env().uri == "bolt://h:1"
    monkeypatch.setenv("KGDB_URI", "neo4j://k:2")
    assert Settings.from_env().uri == "neo4j://k:2"


def test_home_defaults_to_the_platform_data_directory(monkeypatch: pytest.MonkeyPatch,
                                                       tmp_path: Path) -> None:
    monkeypatch.delenv("KGDB_HOME", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert kgdb_home() == tmp_path / "kgdb"


@pytest.mark.parametrize("name,value,needle", [
    ("KGDB_TIMEOUT", "abc", "valid number"),
    ("KGDB_TIMEOUT", "-1", "greater than 0"),
    ("KGDB_LLM_RETRIES", "many", "valid integer"),
    ("KGDB_MAX_KEY_BYTES", "0", "greater than or equal to 1"),
    ("KGDB_DEBUG", "perhaps", "valid boolean"),
])
def test_bad_values_name_the_variable(monkeypatch: pytest.MonkeyPatch, name: str, value: str,
                                      needle: str) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError) as info:
        environment()
    assert str(info.value).startswith(f"{name}={value!r}: ") and needle in str(info.value)


def test_bad_environment_variable_is_one_line_exit_1(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KGDB_TIMEOUT", "abc")
    code, out, err = run_cli(["stats"])
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and err.startswith("kgdb: error: KGDB_TIMEOUT='abc': "), err
    assert "internal error" not in err and "ValueError" not in err
    monkeypatch.setenv("KGDB_TIMEOUT", "5")
    monkeypatch.setenv("KGDB_MAX_PROGRAM_BYTES", "x")
    code, _, err = run_cli(["rules", "compile", str(ROOT / "dsl/examples/hypertension.rules")])
    assert code == 1 and err.startswith("kgdb: error: KGDB_MAX_PROGRAM_BYTES='x': "), err


def test_usage_error_is_one_line_exit_2_in_main_and_clirunner() -> None:
    code, _, err = run_cli(["load", "triples"])
    assert code == 2 and err.count("\n") == 1
    assert err == "kgdb: error: Missing argument 'FILE'. (see 'kgdb load triples --help')\n"
    result = CliRunner().invoke(cli, ["load", "triples"])
    assert result.exit_code == 2 and result.stderr == err
    assert "Error:" not in result.output and "Usage:" not in result.output


def test_kgdb_error_is_one_line_exit_1_in_main_and_clirunner(tmp_path: Path) -> None:
    bad = tmp_path / "bad.rules"
    bad.write_text("Define (T/'a') {\n")
    code, out, err = run_cli(["rules", "compile", str(bad)])
    assert code == 1 and out == "" and err.startswith(f"kgdb: error: {bad}:")
    assert "Error:" not in err and "Traceback" not in err
    result = CliRunner().invoke(cli, ["rules", "compile", str(bad)])
    assert result.exit_code == 1 and result.stderr.startswith(f"kgdb: error: {bad}:")
    assert "\nError:" not in result.output


def test_help_and_version_exit_0() -> None:
    code, out, err = run_cli(["--help"])
    assert code == 0 and "Usage: kgdb" in out and err == ""
    code, out, _ = run_cli(["--version"])
    assert code == 0 and "version" in out


def test_settings_are_validated_again_only_after_a_change(monkeypatch: pytest.MonkeyPatch) -> None:
    """The text contract reads its limits for every loaded value: an unchanged environment must
    give back the already-validated object, and any change must be seen at once."""
    from kgdb.text import limits

    monkeypatch.delenv("KGDB_MAX_KEY_BYTES", raising=False)
    assert environment() is environment()
    assert limits() is limits()
    monkeypatch.setenv("KGDB_TIMEOUT", "12")
    assert environment().KGDB_TIMEOUT == 12.0
    monkeypatch.setenv("KGDB_MAX_KEY_BYTES", "10")
    assert limits().key_bytes == 10
    monkeypatch.setenv("KGDB_MAX_KEY_BYTES", "abc")
    with pytest.raises(ConfigError, match="KGDB_MAX_KEY_BYTES"):
        limits()
