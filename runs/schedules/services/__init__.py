"""Writes for schedules: create, change, pause, delete (schedules.py) and a round's firing (rounds.py)."""
