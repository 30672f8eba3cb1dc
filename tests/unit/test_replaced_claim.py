"""The judge reads our `replaced` self-report: it agrees with what the harness can observe.

`replaced` means another patch sits on ours (or put an original back): the targets then show
changes (observed `applied`) or, with every original back, none (`skipped`). Never
`not-applicable` or `error`, which mean something else."""

from mlxcompat import subjects
from mlxcompat.patches.status import PatchStatus


def test_replaced_agrees_with_applied_or_skipped_only() -> None:
    claim = subjects._claim(PatchStatus("glm4v", "replaced", "replaced by another patch: …"))
    assert claim == ("applied", "skipped")
    assert not PatchStatus("glm4v", "replaced")
