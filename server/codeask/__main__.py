"""``python -m codeask`` runs the CLI (the VS Code extension uses ``python -m codeask serve``)."""

from codeask.cli import run

run()
