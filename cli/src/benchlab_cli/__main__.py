"""`python -m benchlab_cli`, the same as the `benchlab` command."""

from benchlab_cli.main import main

raise SystemExit(main())
