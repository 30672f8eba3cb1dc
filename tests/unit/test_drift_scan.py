"""Static drift-scan rules on small source snippets shaped like two mlx-lm generations."""

from __future__ import annotations

from mlxcompat.drivers.drift_scan import call_digest, scan_lm_sources, scan_vlm_sources

OLD_GENERATE = '''
from .models.cache import BatchKVCache

def _make_cache(model, left_padding):
    return []

def _merge_caches(caches):
    return []

class BatchGenerator:
    def __init__(self, model, max_tokens=128, stop_tokens=None):
        pass
    def insert(self, prompts, max_tokens=None, caches=None):
        return []
    def stats(self):
        return 1
    def _next(self):
        cache = _make_cache(self.model, [0])
        return []
'''
NEW_GENERATE = '''
import contextlib

def _make_cache(model, left_padding, max_kv_size):
    return []

def _merge_caches(caches):
    return []

class BatchGenerator:
    def __init__(self, model, *, max_tokens=128, stream=None):
        self.c = _merge_caches([])
    def insert(self, prompts, max_tokens=None):
        return []
    @contextlib.contextmanager
    def stats(self):
        yield 1
    def _next(self):
        return prompt_responses, generation_responses
'''
OLD_CACHE = '''
class ArraysCache:
    def filter(self, i): pass
    def extend(self, o): pass
class MambaCache(ArraysCache):
    pass
class BatchKVCache:
    pass
'''
NEW_CACHE = '''
class ArraysCache:
    def filter(self, i): pass
    def extract(self, i): pass
    @classmethod
    def merge(cls, caches): pass
class BatchKVCache:
    pass
'''


def _probe(generate: str, cache: str) -> dict:
    return scan_lm_sources({"mlx_lm/generate.py": generate, "mlx_lm/models/cache.py": cache})


def test_old_release_shape() -> None:
    row = _probe(OLD_GENERATE, OLD_CACHE)
    assert row["_make_cache"] == "2 args, called"
    assert row["_merge_caches"] == "never called"
    assert row["MambaCache"] == "present"
    assert row["ArraysCache batch methods"] == "filter extend"
    assert row["BatchKVCache"] == "mlx_lm.models.cache (re-exported by generate)"
    assert row["BatchGenerator(...) keywords"] == "max_tokens stop_tokens"
    assert (row["insert(caches=)"], row["next() returns"], row["stats()"]) == (
        "yes", "list", "method")


def test_new_release_shape() -> None:
    row = _probe(NEW_GENERATE, NEW_CACHE)
    assert row["_make_cache"] == "3 args, never called"
    assert row["_merge_caches"] == "called"
    assert row["MambaCache"] == "absent"
    assert row["ArraysCache batch methods"] == "filter extract merge"
    assert row["BatchGenerator(...) keywords"] == "max_tokens stream [keyword-only]"
    assert (row["insert(caches=)"], row["next() returns"], row["stats()"]) == (
        "no", "tuple (prompt, generation)", "context manager")


def test_glm4v_fingerprint_ignores_indentation_and_blank_lines() -> None:
    a = "class GLM4VModel:\n    def __call__(self, x):\n\n        return x\n"
    b = "class GLM4VModel:\n  def __call__(self, x):\n      return x\n"
    assert call_digest(a, "GLM4VModel", "__call__") == call_digest(b, "GLM4VModel", "__call__")
    assert call_digest(a, "GLM4VModel", "missing") is None


def test_vlm_without_glm4v_is_absent() -> None:
    assert scan_vlm_sources({}, {}) == {"glm4v_moe": "absent"}
