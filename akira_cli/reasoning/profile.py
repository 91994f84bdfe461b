"""Phase A: infer the TaskProfile with one call, and map it to a TTL and caps.

`ttl_for` is the documented deterministic mapping. It adds no semantic judgement:

    passes     = reasoning_depth + 1
                 + 1 if information_sufficiency < 0.5
                 + 1 if confidence_requirement == "high"
                 + 1 if output_breadth == "broad"
    nesting    = max(2, reasoning_depth)
    refine_all = 2 * passes                   (before passes is capped)
    per_frag   = settings.max_refinements_per_fragment

Each value is then capped by its global setting (`max_passes`, `max_nesting_depth`,
`max_refinements_total`); every cut is listed in `cap_hits`, so no cap applies silently.
Examples with the default settings: the default profile (3, 0.5, moderate, moderate,
medium) gets 4 passes; (1, 0.9, none, narrow, low) gets 2; (5, 0.2, extensive, broad, high)
asks for 9 and is capped to 6.
"""

from __future__ import annotations

from akira_cli.llm.client import LLMClient
from akira_cli.llm.types import LLMError
from akira_cli.reasoning import prompts
from akira_cli.reasoning.models import TaskProfile, TTLAllocation
from akira_cli.sections import ReasoningSettings


def ttl_for(profile: TaskProfile, settings: ReasoningSettings) -> TTLAllocation:
    """The TTL (in execution passes) and refinement caps for a profile; see the module doc."""
    passes = profile.reasoning_depth + 1
    passes += profile.information_sufficiency < 0.5
    passes += profile.confidence_requirement == "high"
    passes += profile.output_breadth == "broad"
    requested = {
        "passes": passes,
        "max_nesting_depth": max(2, profile.reasoning_depth),
        "max_refinements_per_fragment": settings.max_refinements_per_fragment,
        "max_refinements_total": 2 * passes,
    }
    caps = {
        "passes": settings.max_passes,
        "max_nesting_depth": settings.max_nesting_depth,
        "max_refinements_per_fragment": settings.max_refinements_per_fragment,
        "max_refinements_total": settings.max_refinements_total,
    }
    granted = {key: min(value, caps[key]) for key, value in requested.items()}
    hits = [
        f"{key}: {requested[key]} capped to {caps[key]}" for key in requested if requested[key] > caps[key]
    ]
    return TTLAllocation(**granted, requested=requested, cap_hits=hits)


def infer_profile(client: LLMClient, task: str, context: str) -> tuple[TaskProfile, str | None]:
    """One model call. Any failure, schema or API, yields the default profile and the reason.

    A schema error is repaired by the client's structured retry; the profile is never
    inferred a second time because of it.
    """
    try:
        messages = prompts.messages("profile", task=task, context=context or "(none)")
        return client.structured(messages, TaskProfile, purpose="reasoning.profile"), None
    except LLMError as exc:
        return TaskProfile.default(), f"profile inference failed: {exc}"


def reassess_profile(client: LLMClient, task: str, profile: TaskProfile, observations: str) -> TaskProfile:
    """Phase D: the model re-judges the profile given what the passes showed. Raises LLMError."""
    messages = prompts.messages("profile_update", task=task, profile=profile, observations=observations)
    return client.structured(messages, TaskProfile, purpose="reasoning.profile_update")
