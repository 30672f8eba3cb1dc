"""Deliberately broken patch modules (negative controls for mlxcompat's own tests).

Each breaks batching in one way a real patch could; the harness must fail every one of them
by name, while a correct subject in the same run stays green. Each is idempotent (a marker
attribute), so only its intended defect shows.
"""
