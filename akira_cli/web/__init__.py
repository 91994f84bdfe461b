"""`akira web`: the night at a glance, in a browser (docs/web.md). A page on the run API, behind
the door of `akira mcp --http` (`akira_cli/door.py`); only `cli/web_cmd.py` imports it."""
