"""fabcheck: configure and prove lossless GPU fabrics from one fabric intent."""

__version__ = "0.1.0"
