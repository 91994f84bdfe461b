"""akira's child processes: the ledger of their process groups (`ledger.py`, killed after a crash)
and the reaper started with each run that kills them when akira dies (`children/reaper.py`)."""
