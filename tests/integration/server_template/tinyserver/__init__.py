"""A tiny stand-in for an MLX server that carries its own patch modules."""
