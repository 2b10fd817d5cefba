"""Campaigns repeated on a schedule (runs.models.schedules): the crontab, the rounds, their pages' reads."""
