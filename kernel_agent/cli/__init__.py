"""The `kagent` command line: `app` (typer) with the commands of the modules below registered on it.

Modules: app (the application, shared checks and exit codes), task_commands (check, tasks validate,
sweep, doctor), optimize_command (optimize), measure_command (measure), port_command (port,
skeletons), bench_commands (bench, suite-table, replay-bench), repair_command (repair,
repair-bench), export_command (export), finetune_command (finetune), import_command
(import kernelbench); gpu_checks holds what the
commands that check many kernels share. What the commands show is drawn by
`kernel_agent/render/`.
"""

from .app import app

# Importing each module registers its commands, in the order `kagent --help` lists them.
from . import task_commands, optimize_command, measure_command, port_command, bench_commands, repair_command, export_command, finetune_command, import_command  # noqa: F401,E501  # isort: skip


def main() -> None:
    app()


__all__ = ["app", "main"]
