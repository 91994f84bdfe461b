"""The morning review's reviewer per step (docs/design.md): a second agent's verdict after a step's
checks pass and before its commit."""
