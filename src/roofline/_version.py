"""The package version, apart from the package root so that any module can name it without importing the root."""

__version__ = "0.1.0"
