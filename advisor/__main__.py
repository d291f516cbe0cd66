"""``python -m advisor``: the same entry point as the ``advisor`` command."""

from advisor.cli import main

raise SystemExit(main())
