"""Accounts' own: API tokens that each user makes, lists and revokes (`token_rules.py` pure,
`services/tokens.py` writes, `selectors.py` reads)."""
