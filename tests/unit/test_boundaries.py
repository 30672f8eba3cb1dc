"""A boundary is stated exactly only where PyPI has no release between the two cells."""

from mlxcompat.report.boundaries import between, edge

RELEASES = {"mlx-vlm": ["0.7.6", "0.7.8", "0.7.9", "0.7.10"], "mlx-lm": ["0.31.3", "0.32.0"]}


def test_neighbouring_releases_give_an_exact_boundary() -> None:
    assert edge(RELEASES, "mlx-lm", "0.31.3", "0.32.0", "fixed in") == ("fixed in lm 0.32.0", True)


def test_a_release_between_the_cells_gives_a_range_naming_it() -> None:
    text, exact = edge(RELEASES, "mlx-vlm", "0.7.8", "0.7.10", "fixed in")
    assert not exact and text == "fixed after vlm 0.7.8, by 0.7.10 (0.7.9 not measured)"
    assert between(RELEASES, "mlx-vlm", "0.7.6", "0.7.10") == ["0.7.8", "0.7.9"]


def test_unknown_release_lists_never_read_as_exact() -> None:
    text, exact = edge({}, "mlx-lm", "0.31.3", "0.32.0", "first bad")
    assert not exact and "releases between not known" in text
