"""The LLM client: every model call goes through `LLMClient`."""
