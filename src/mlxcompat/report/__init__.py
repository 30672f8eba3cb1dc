"""Turn reports/raw/*.json into the compatibility report (imports no mlx)."""
