"""The compat tests, shipped in the wheel and run by the `mlxcompat` pytest plugin.

`mlxcompat run` starts `pytest --pyargs mlxcompat.suite --mlxcompat-run=<spec>` once per
subject; the plugin parametrizes every test from the spec (the matrix's models and roles).
"""
