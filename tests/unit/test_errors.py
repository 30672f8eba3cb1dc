import json

import pytest

from mlxcompat.errors import describe_exception, set_subject_code
from mlxcompat.records.files import write_json_atomic


def test_atomic_write_leaves_only_the_file(tmp_path):
    target = tmp_path / "raw" / "cell.json"
    write_json_atomic(target, {"a": 1})
    write_json_atomic(target, {"a": 2})
    assert json.loads(target.read_text()) == {"a": 2}
    assert [p.name for p in target.parent.iterdir()] == ["cell.json"]


def test_atomic_write_keeps_old_file_when_serialisation_fails(tmp_path):
    target = tmp_path / "cell.json"
    write_json_atomic(target, {"ok": True})

    class Boom:
        def __str__(self):
            raise RuntimeError("cannot serialise")

    with pytest.raises(RuntimeError):
        write_json_atomic(target, {"bad": Boom()})
    assert json.loads(target.read_text()) == {"ok": True}
    assert len(list(tmp_path.iterdir())) == 1


def test_describe_exception_names_type_message_and_frame():
    def inner():
        raise ValueError("shapes (3) and (4) differ\nsecond line")

    try:
        inner()
    except ValueError as exc:
        text = describe_exception(exc)
    assert text.startswith("ValueError: shapes (3) and (4) differ (at test_errors.py:")
    assert "second line" not in text
    assert "in inner" in text


def test_error_raised_in_the_subjects_code_says_so(tmp_path, monkeypatch):
    """A patch's own bug must not read as upstream's: name the subject's frame and the
    innermost upstream frame apart."""
    upstream = tmp_path / "site-packages" / "mlx_lm" / "generate.py"
    subject = tmp_path / "site-packages" / "vllm_mlx" / "utils" / "mamba_cache.py"
    for path, body in ((upstream, "def step(fn):\n    return fn()\n"),
                       (subject, "def merge():\n    raise IndexError('out of range')\n")):
        path.parent.mkdir(parents=True)
        path.write_text(body)
    scope = {}
    exec(compile(upstream.read_text(), str(upstream), "exec"), scope)
    sub = {}
    exec(compile(subject.read_text(), str(subject), "exec"), sub)
    set_subject_code((str(subject.parent.parent),))
    try:
        scope["step"](sub["merge"])
    except IndexError as exc:
        text = describe_exception(exc)
    finally:
        set_subject_code(())
    assert "raised in the subject's own code at vllm_mlx/utils/mamba_cache.py:2 in merge" in text
    assert "innermost upstream frame mlx_lm/generate.py:2 in step" in text
