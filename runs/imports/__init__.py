"""Imported runs (issue 35): pgbench output uploaded, checked line by line, stored as a done run."""
