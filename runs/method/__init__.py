"""Whether a number can mean what its reader thinks: the method checks.

pgbench numbers are easy to get and easy to get wrong (pgbench's "Good Practices", Greg Smith's
pgbench-tools, Tomas Vondra's filesystem studies). Each check here reads what a run recorded
(or, before it runs, what it asks for) and says passed, warning or not applicable, with a one-line
reason and what to change. Nothing here changes a run: a warning can only be accepted, with a
reason that is recorded (services/acceptance.py).

- `facts.py`: one run's facts, from its stored records or estimated from its specification;
- `run_checks.py`: the checks of one run, in the order the Method panel lists them;
- `comparison_checks.py`: the checks of groups compared (a storage comparison that fit in RAM,
  groups that differ in durability, checkpoints or state);
- `selectors.py`: a run's facts and checks read from the database (its page; the list columns
  `memory_tier` and `durable`, written with its results);
- `tiers.py`: the memory tier and what makes a run not durable;
- `services/acceptance.py`: accepting a warning with a reason.
"""
