"""Grounded Checklist Partial Credit."""
