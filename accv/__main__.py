"""``python -m accv`` runs the CLI."""

from .cli import main

raise SystemExit(main())
