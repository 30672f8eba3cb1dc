"""The server's patch for an existing role (mamba): it vendors mlxcompat's patch module."""

from mlxcompat.patches.mamba_cache import ensure_mamba_support, unpatch

__all__ = ["ensure_mamba_support", "unpatch"]
