"""mlxcompat: does each continuous-batching patch apply, step aside, and keep batched == single?"""

__version__ = "0.1.0"
