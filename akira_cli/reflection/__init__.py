"""The reflection engine: episodic memory, reflection generators, retry prompts (seeds 000, 002, 003)."""
