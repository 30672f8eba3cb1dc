"""matrix.yaml described for editors: the JSON Schema of the file's shape (keys, types).

`mlxcompat schema` writes it beside the schemas of the cell JSON and compat.json. The meaning
of each value (a known model, an upper version bound, a regex) is checked by `matrix.py`;
a unit test keeps the keys of both in step, so the schema never allows a key the loader
refuses, or misses one it reads.
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from mlxcompat.records.base import Record

Names = str | list[str]


class _Strict(Record):
    model_config = ConfigDict(extra="forbid")


class ProfileFile(_Strict):
    batches: list[int] = Field(default_factory=list, description="batch sizes")
    rounds: int | None = None
    warmup: int | None = None
    prompt_tokens: int | None = None
    gen_tokens: int | None = None
    repeats: int | None = Field(
        None, description="runs per round: a round's tok/s is their tokens over their seconds")
    gating: bool = Field(False, description="compared with a same-machine baseline")
    models: list[str] | None = None
    dtypes: list[Literal["float32", "bfloat16", "float16", "q4"]] | None = None
    prompts: list[Literal["uniform", "mixed"]] | None = Field(
        None, description="prompt-length shapes: uniform, or mixed (log-uniform L/4..2L)")


class BenchFile(_Strict):
    default: str | None = Field(None, description="a profile name, or off")
    models: list[str] | None = None
    profiles: dict[str, ProfileFile] = Field(default_factory=dict)


class SettingsFile(_Strict):
    python: str | None = None
    timeout_s: float | None = None
    tolerance: float | None = None
    throughput_threshold: float | None = None
    backend: str | None = None
    force_cpu_devices: list[str] | None = None
    bench: BenchFile | None = None


class BackendFile(_Strict):
    device: Literal["cpu", "gpu"]
    requirement: dict[Literal["linux", "darwin"], str]


class SubjectFile(_Strict):
    description: str = ""
    install: list[str] = Field(default_factory=list,
                               description="requirements, or local paths installed editable")
    entry_points: dict[str, str] = Field(default_factory=dict,
                                         description="role -> module:function")


class FamilyEntryFile(_Strict):
    entry: str = Field(description="module:function")
    releases: str = Field("", description="the releases that ship its module (a specifier)")


class FamilyFile(_Strict):
    """Many releases of one package, one subject each (mlxcompat.families)."""

    description: str = ""
    package: str = Field(description="the package on the index")
    versions: Literal["all", "newest"] | list[str] = Field(
        "all", description="all or newest (from <matrix>.lock.json), or a list of releases")
    within: str = Field("", description="a version specifier the releases must satisfy")
    entry_points: dict[str, str | FamilyEntryFile] = Field(
        default_factory=dict, description="role -> module:function, or with its releases")


class SourceFile(_Strict):
    """A package built from source: a git URL at a commit or ref, or a local folder."""

    git: str | None = None
    commit: str | None = None
    ref: str | None = None
    path: str | None = None


class ModelFile(_Strict):
    factory: str = Field(description="module:function, seed -> tiny model")
    runner: Literal["lm", "glm4v", "vlm"]
    modes: list[str] | None = None
    description: str = ""


class RoleFile(_Strict):
    targets: list[str]
    checks: list[str]
    models: list[str] = Field(default_factory=list)
    need: str = ""
    forced: bool = False
    description: str = ""


class CellFile(_Strict):
    id: str | None = None
    mlx_lm: str | SourceFile | None = Field(None, alias="mlx-lm")
    mlx: str | SourceFile | None = None
    mlx_vlm: str | SourceFile | None = Field(None, alias="mlx-vlm")
    resolve: str | None = Field(None, description="latest, or a subject name")
    models: list[str] | None = None
    subjects: list[str] | None = None
    extra_subjects: list[str] | None = Field(None, description="added to the defaults")
    tags: list[str] = Field(default_factory=list)
    timeout_s: float | None = None
    bench_models: list[str] | None = None
    bench: str | None = Field(None, description="this cell's bench profile (default: the "
                              "settings' default)")
    curve: str | None = Field(None, description=(
        "a bench profile `nox -s curve` runs in this cell (its throughput only, into "
        "<cell>.curve.json, joined to the cell's rows by the report); the matrix run leaves "
        "it out"))
    extra_checks: list[str] | None = Field(
        None, description="checks run in this cell beside `checks:` (heavy ones, e.g. server)")


class RunnerFile(_Strict):
    cells: list[str] | None = None
    backend: str | None = None
    subjects: list[str] | None = None
    models: list[str] | None = None


class MatchFile(_Strict):
    check: Names | None = None
    model: Names | None = None
    mode: Names | None = None
    role: Names | None = None
    scenario: Names | None = None
    path: Names | None = None
    test: Names | None = None
    dtype: Names | None = None
    subject: Names | None = None
    cell: Names | None = None
    backend: Names | None = None
    mlx_lm: str | None = Field(None, alias="mlx-lm", description="a version specifier")
    mlx: str | None = None
    mlx_vlm: str | None = Field(None, alias="mlx-vlm")
    release: str | None = Field(None, description="a family member's release (a specifier)")
    device: Names | None = None


class ExpectationFile(_Strict):
    match: MatchFile
    verdict: Literal["pass", "fail", "error", "skip"]
    reason: str
    link: str = ""
    open: bool = False
    max_delta: float | None = None
    tokens_equal: bool | None = None
    error: str = ""


class DefaultsFile(_Strict):
    subjects: list[str] | None = None
    models: list[str] | None = None


class MatrixFile(_Strict):
    """What mlxcompat tests: cells, backends, subjects, models, roles, expectations."""

    schema_: Literal[3] = Field(alias="schema")
    settings: SettingsFile | None = None
    backends: dict[str, BackendFile]
    subjects: dict[str, FamilyFile | SubjectFile | None]
    models: dict[str, ModelFile] | None = None
    roles: dict[str, RoleFile] | None = None
    checks: list[str] | None = None
    defaults: DefaultsFile | None = None
    cells: list[CellFile]
    runners: dict[str, RunnerFile] | None = None
    expectations: list[ExpectationFile] | None = None
