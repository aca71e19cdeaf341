"""The package version (read by ``twolayer.__version__`` and by sweep workers' version check)."""

__version__ = "0.1.0"
