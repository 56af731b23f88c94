"""`python3 -m kernel_agent` runs the kagent command line (for machines where it is not installed)."""

from .cli import app

app(prog_name="kagent")
