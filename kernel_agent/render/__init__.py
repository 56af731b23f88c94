"""Everything a person sees in the terminal: outcomes, live progress displays and summary tables.

Modules: outcome (one Outcome as a table), progress (the live lines of sweep, optimize and bench),
tables (the summaries after a run, a bench, a validation, the suite and replay-bench tables).
Consoles show no emoji and no guessed highlights; every piece of user or compiler text that goes into
a markup string is escaped.
"""

from rich.console import Console

console = Console(emoji=False, highlight=False)
errors = Console(stderr=True, emoji=False, highlight=False)
