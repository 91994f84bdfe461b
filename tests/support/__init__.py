"""What the tests share, imported as `tests.support.<module>`: workspaces and repositories as a
person has them, the harnesses that drive akira and check what it left, and the servers on
127.0.0.1 it is pointed at (`servers`). A test module imports from here or takes a fixture from a
conftest.py, never from another test module. The wheel does not ship any of it."""
