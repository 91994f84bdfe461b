"""The spec's acceptance criteria (the morning review): Kiro's requirements.md and spec-kit's spec.md, the
ids the steps name, and the table of evidence per criterion that the report ends with."""
