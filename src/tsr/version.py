"""The package version (the root ``tsr`` module re-exports it as ``tsr.__version__``)."""

__version__ = "0.1.0"
