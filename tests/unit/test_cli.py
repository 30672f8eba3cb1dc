"""`mlxcompat run` refuses names it does not know, listing the valid ones (a typo must never
deselect everything and stay green)."""

from pathlib import Path

import pytest

from mlxcompat.cli import main

MATRIX = str(Path(__file__).resolve().parents[2] / "matrix.yaml")


@pytest.mark.parametrize(("option", "value", "words"), [
    ("--checks", "parrity", "unknown check parrity; valid: install, import, parity"),
    ("--modes", "histroy", "unknown mode histroy; valid:"),
    ("--roles", "mambo", "unknown role mambo; valid: gemma4-vlm, glm4v, mamba"),
    ("--scenarios", "paded", "unknown scenario paded; valid:"),
    ("--models", "gpt2", "unknown model gpt2; valid: llama"),
    ("--subjects", "nobody", "unknown subject nobody; valid: none"),
])
def test_unknown_names_exit_2_naming_the_valid_ones(option, value, words, capsys, tmp_path):
    code = main(["--matrix", MATRIX, "run", "--cell", "mlx-lm-0.32.2", option, value,
                 "--out", str(tmp_path / "x.json")])
    assert code == 2
    assert words in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()


def test_list_names_cells_subjects_models_and_roles(capsys):
    assert main(["--matrix", MATRIX, "list"]) == 0
    out = capsys.readouterr().out
    assert "mlx-lm-0.32.2" in out and "roles:    mamba, mamba-legacy, glm4v" in out


def test_posargs_split_between_the_cells_and_the_report() -> None:
    from mlxcompat.nox import split_posargs

    run, report = split_posargs(["--reuse", "--tag", "quick", "-j", "1", "--accept",
                                 "--junit=out.xml", "--bench=off"])
    assert run == ["--reuse", "-j", "1", "--bench=off"]
    assert report == ["--tag", "quick", "--accept", "--junit=out.xml"]
