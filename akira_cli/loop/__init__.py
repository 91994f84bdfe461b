"""The loop core: the loop (`core.py`), the per-step engine (`engine.py`), the task file as the
loop sees it (`taskbook.py`), parallel waves (`waves.py`) and the wiring of one run (`session.py`)."""
