"""Reads behind the comparison page, its API and exports."""
