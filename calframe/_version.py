"""calframe's version (one place: the package, saved recalibrators and the CLI read it)."""

__version__ = "0.1.0"
