"""accelkit's version, in a module of its own so any layer can read it without importing the package root."""

__version__ = "0.1.0"
