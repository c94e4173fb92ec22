"""The tool's version, read by the build and written into every snapshot."""

__version__ = "0.2.0"
