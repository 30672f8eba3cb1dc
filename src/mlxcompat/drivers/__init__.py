"""The only code that knows how mlx-lm / mlx-vlm releases differ.

Everything else asks these modules what the installed release can do.
"""
