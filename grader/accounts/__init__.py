"""Accounts: users and their roles, local passwords, and the API keys instructors make."""
