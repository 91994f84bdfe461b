"""The exam of a step (docs/design.md, the exam): the files its checks run, fixed before its
first attempt, and the held-out run that judges a pass which changed them."""
