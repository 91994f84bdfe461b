"""The adaptive multi-pass reasoning engine behind the `llm` agent and `akira reason`.

Phase A infers a TaskProfile and derives a TTL; Phase B plans, validates and refines before
anything runs; Phase C executes passes (batch, evaluate, decide, refine); Phase D may update
the profile at a pass boundary. The LLM only emits structured signals; the host decides.
"""
