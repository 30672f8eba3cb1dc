"""The server's patch for its own role: raises its prefill chunk for tiny batches."""

from tinyserver import models

_saved = {}


def apply() -> bool:
    if "settings" not in _saved:
        _saved["settings"] = models.SETTINGS
        models.SETTINGS = {**models.SETTINGS, "tokens_per_batch": 8}
    return True


def unpatch() -> None:
    if "settings" in _saved:
        models.SETTINGS = _saved.pop("settings")
