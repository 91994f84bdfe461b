"""The morning review's reviewer per step (SPEC 16): a second agent's verdict after a step's
checks pass and before its commit."""
