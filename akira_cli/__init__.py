"""akira: works through a spec's task list unattended (the map: CONTRIBUTING.md)."""
