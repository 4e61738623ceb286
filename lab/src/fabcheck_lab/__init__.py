"""fabcheck's lab: mock GPU hosts and switches on this machine, driven by `fabcheck lab ...`.

A distribution of its own (lab/pyproject.toml, fabcheck-lab): the product never imports it; its
command reaches fabcheck's command line through the fabcheck.commands entry point."""

__version__ = "0.1.0"
