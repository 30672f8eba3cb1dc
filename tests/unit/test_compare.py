import numpy as np

from mlxcompat.checks.compare import compare_rows


def _compare(*args, **kwargs):
    """(verdict, metrics with the row fields Δ and tokens_equal, detail) of one comparison."""
    found = compare_rows(*args, **kwargs)
    metrics = {**found.metrics, "max_abs_delta": found.delta, "tokens_equal": found.tokens_equal}
    return found.verdict, metrics, found.detail


def _scores(*rows):
    return [[np.array(step) for step in row] for row in rows]


def test_identical_rows_pass_with_zero_delta():
    s = _scores([[0.0, -1.0], [-2.0, 0.0]])
    verdict, metrics, _ = _compare(s, s, [[1, 2]], [[1, 2]], 1e-4)
    assert verdict == "pass"
    assert metrics["max_abs_delta"] == 0.0
    assert metrics["mismatched_rows"] == []


def test_delta_over_tolerance_fails_and_is_reported():
    a = _scores([[0.0, -1.0]])
    b = _scores([[0.0, -1.001]])
    verdict, metrics, detail = _compare(a, b, [[3]], [[3]], 1e-4)
    assert verdict == "fail"
    assert abs(metrics["max_abs_delta"] - 0.001) < 1e-9
    assert "1.00e-03 > 1e-04" in detail


def test_token_mismatch_fails_and_names_row_and_step():
    a = _scores([[0.0]] * 3, [[0.0]] * 3)
    batched, single = [[1, 2, 3], [4, 5, 6]], [[1, 2, 3], [4, 9, 6]]
    verdict, metrics, detail = _compare(a, a, batched, single, 1e-4)
    assert verdict == "fail"
    assert metrics["tokens_equal"] is False
    assert metrics["mismatched_rows"][0]["row"] == 1
    assert metrics["mismatched_rows"][0]["first_diff"] == 1
    assert "row 1 from step 1" in detail


def test_scores_after_divergence_are_ignored():
    a = _scores([[0.0], [0.0], [100.0]])
    b = _scores([[0.0], [0.0], [0.0]])
    _, metrics, _ = _compare(a, b, [[1, 2, 3]], [[1, 9, 3]], 1e-4)
    assert metrics["max_abs_delta"] == 0.0


def test_shorter_batched_row_is_a_mismatch():
    a = _scores([[0.0]])
    b = _scores([[0.0], [0.0]])
    verdict, metrics, _ = _compare(a, b, [[1]], [[1, 2]], 1e-4)
    assert verdict == "fail"
    assert metrics["mismatched_rows"][0]["first_diff"] == 1


def test_nan_scores_fail_and_are_named_not_hidden():
    a = _scores([[0.0, float("nan")]], [[0.0, 0.0]])
    b = _scores([[0.0, -1.0]], [[0.0, 0.0]])
    verdict, metrics, detail = _compare(a, b, [[0], [0]], [[0], [0]], 1e-4)
    assert verdict == "fail"
    assert metrics["non_finite_rows"] == [0]
    assert metrics["max_abs_delta"] is None
    assert "NaN/inf scores in rows [0]" in detail


def test_no_rows_fail():
    verdict, _, detail = _compare([], [], [], [], 1e-4)
    assert verdict == "fail" and "no rows were compared" in detail


def test_a_row_without_tokens_fails():
    verdict, _, detail = _compare([[]], [[]], [[]], [[]], 1e-4)
    assert verdict == "fail" and "row 0 has no tokens" in detail


def test_score_count_must_match_token_count():
    a = _scores([[0.0], [0.0]])
    verdict, _, detail = _compare(a, a, [[1]], [[1]], 1e-4)
    assert verdict == "fail" and "2 scores for 1 batched tokens" in detail


def test_nan_after_the_divergence_still_fails():
    a = _scores([[0.0], [0.0], [float("nan")]])
    b = _scores([[0.0], [0.0], [0.0]])
    verdict, metrics, _ = _compare(a, b, [[1, 2, 3]], [[1, 9, 3]], 1e-4)
    assert verdict == "fail" and metrics["non_finite_rows"] == [0]


def test_nan_in_the_reference_fails_too():
    a = _scores([[0.0]])
    b = _scores([[float("inf")]])
    verdict, metrics, _ = _compare(a, b, [[1]], [[1]], 1e-4)
    assert verdict == "fail" and metrics["non_finite_rows"] == [0]


def test_stalled_rows_fail_and_are_named():
    a = _scores([[0.0]])
    verdict, metrics, detail = _compare(a, a, [[1]], [[1]], 1e-4, stalled=[0])
    assert verdict == "fail" and metrics["stalled_rows"] == [0] and "stalled" in detail
