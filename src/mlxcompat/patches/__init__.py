"""The patch modules under test: this project's own implementation of the seed contracts."""
