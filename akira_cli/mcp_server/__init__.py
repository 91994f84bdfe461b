"""`akira mcp`: the run API served to other agents over the Model Context Protocol, with the
official `mcp` SDK: `tools.py` the tools, `transport.py` stdio or streamable HTTP (with a
bearer token). Imported only by `akira mcp`."""
