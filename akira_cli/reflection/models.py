"""What a reflection generator is given, and what an LLM is asked to return."""

from __future__ import annotations

from pydantic import BaseModel, Field

from akira_cli.reflection.memory import Category
from akira_cli.state.records import PostActionReflection


class FailureContext(BaseModel):
    task_id: str
    step_id: str
    step_description: str
    attempt: int
    approach: str
    actions: list[str] = Field(default_factory=list)
    error_output: str
    files_modified: list[str] = Field(default_factory=list)
    previous_reflections: list[str] = Field(default_factory=list)
    signature: str = ""


class ReflectionDraft(BaseModel):
    """The JSON an LLM returns for a failure: its cause and what to try next."""

    category: Category
    analysis: str = Field(max_length=600)
    suggestion: str = Field(max_length=600)
    action_items: list[str] = Field(default_factory=list, max_length=6)
    confidence: float = Field(ge=0, le=1)


class PostActionDraft(PostActionReflection):
    """The JSON an LLM returns after a completed step: the lesson it leaves."""
