"""The reflection service: reflect on every strategic failure, note lessons after every success.

The LLM generator is used when configured and `reflection.use_llm` is set; any failure of it
falls back to the heuristic. Nothing here may stop the loop, and nothing here writes the
state: the service says what it found (`Reflected`, a lesson) and the loop records it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from akira_cli.config import Config
from akira_cli.events import EventBus, EventType
from akira_cli.failures import key_line
from akira_cli.reflection.heuristic import HeuristicGenerator
from akira_cli.reflection.memory import Reflection, ReflectionMemory
from akira_cli.reflection.models import FailureContext
from akira_cli.state.models import LoopState
from akira_cli.state.records import NOT_EVIDENCE, Attempt, PostActionReflection, StepRecord
from akira_cli.words import clipped
from akira_cli.workspace import Workspace

if TYPE_CHECKING:
    from akira_cli.llm.client import LLMClient


class ReflectionGenerator(Protocol):
    source: str

    def generate(self, failure: FailureContext) -> Reflection: ...


class LessonWriter(Protocol):
    def lesson(self, record: StepRecord, attempt: Attempt) -> PostActionReflection: ...


class HeuristicLessons:
    def lesson(self, record: StepRecord, attempt: Attempt) -> PostActionReflection:
        failed = [a for a in record.window() if a.outcome == "failure"]
        improve = (
            f"needed {attempt.number} attempts; first failed: {key_line(failed[0].error)}"
            if failed
            else "nothing: passed on the first attempt"
        )
        lesson = f"{attempt.approach} worked after {failed[-1].approach} failed" if failed else ""
        return PostActionReflection(
            outcome="success",
            what_worked=clipped(f"{attempt.approach} {worked(attempt)}", 100),
            what_to_improve=clipped(improve, 100),
            lesson_learned=clipped(lesson, 150),
        )


def worked(attempt: Attempt) -> str:
    """What the attempt's success rests on: its checks, or, without any, its changed files alone."""
    checks = attempt.evaluation.checks if attempt.evaluation is not None else []
    real = [check for check in checks if check.name not in NOT_EVIDENCE]
    if attempt.verified and real:
        return f"passed its {'check' if len(real) == 1 else f'{len(real)} checks'}"
    return "changed files, with no check to pass (unverified)"


@dataclass(frozen=True)
class Reflected:
    """A reflection on a failed attempt, kept in the memory: for the loop to record."""

    id: str
    tokens: int
    systemic: str | None = None
    """Its error signature, when other tasks of the workspace failed with it too and the run
    did not know it yet (a systemic issue)."""


class ReflectionService:
    def __init__(
        self,
        workspace: Workspace,
        config: Config,
        bus: EventBus,
        generator: ReflectionGenerator | None = None,
        lessons: LessonWriter | None = None,
    ) -> None:
        self.config = config
        self.bus = bus
        self.memory = ReflectionMemory(workspace.memory)
        self.fallback = HeuristicGenerator()
        self.generator: ReflectionGenerator = generator or self.fallback
        self.lessons: LessonWriter = lessons or HeuristicLessons()

    def after_failure(self, state: LoopState, record: StepRecord, attempt: Attempt) -> Reflected | None:
        """The reflection on a failed attempt (None: reflection is off)."""
        if not self.config.reflection.enabled:
            return None
        failure = FailureContext(
            task_id=state.task_id,
            step_id=record.step_id,
            step_description=record.description,
            attempt=attempt.number,
            approach=attempt.approach,
            actions=attempt.actions,
            error_output=(attempt.error + "\n" + attempt.output_tail)[-4000:],
            files_modified=attempt.files_changed,
            signature=attempt.error_signature,
            previous_reflections=[
                r.analysis
                for r in self.memory.recent(
                    state.task_id, record.step_id, self.config.reflection.max_reflections_in_prompt
                )
            ],
        )
        reflection = self.generate(failure)
        self.memory.append(reflection)
        self.bus.emit(
            EventType.REFLECTION_GENERATED,
            record.step_id,
            id=reflection.id,
            category=reflection.category,
            source=reflection.source,
            suggestion=reflection.suggestion,
            tokens=reflection.tokens,
        )
        return Reflected(reflection.id, reflection.tokens, self.systemic(state, reflection))

    def generate(self, failure: FailureContext) -> Reflection:
        if self.generator is self.fallback:
            return self.fallback.generate(failure)
        try:
            return self.generator.generate(failure)
        except Exception as exc:
            self.bus.emit(
                EventType.WARNING,
                failure.step_id,
                message=f"LLM reflection failed, using the heuristic: {exc}"[:300],
            )
            return self.fallback.generate(failure)

    def systemic(self, state: LoopState, reflection: Reflection) -> str | None:
        """The same error signature in other tasks of the workspace is a systemic issue: a new
        one's signature, else None."""
        if not reflection.signature:
            return None
        tasks = {r.task_id for r in self.memory if r.signature == reflection.signature}
        if len(tasks) > 1 and reflection.signature not in state.systemic_issues:
            self.bus.emit(
                EventType.SYSTEMIC_ISSUE,
                reflection.step_id,
                signature=reflection.signature,
                tasks=sorted(tasks),
                analysis=reflection.analysis,
            )
            return reflection.signature
        return None

    def after_success(self, state: LoopState, record: StepRecord, attempt: Attempt) -> PostActionReflection:
        """The lesson of a completed step, for its record."""
        try:
            lesson = self.lessons.lesson(record, attempt)
        except Exception as exc:  # graceful degradation: a failed lesson must never block the loop
            self.bus.emit(EventType.WARNING, record.step_id, message=f"lesson failed: {exc}"[:300])
            lesson = HeuristicLessons().lesson(record, attempt)
        self.bus.emit(EventType.POST_ACTION_REFLECTION, record.step_id, **lesson.model_dump())
        return lesson


def build_reflection(
    workspace: Workspace, config: Config, bus: EventBus, client: LLMClient | None = None
) -> ReflectionService:
    """The LLM generator when a client is configured and `reflection.use_llm`, else heuristics."""
    if client is None or not config.reflection.use_llm:
        return ReflectionService(workspace, config, bus)
    from akira_cli.reflection.llm import LLMLessons, LLMReflectionGenerator

    return ReflectionService(workspace, config, bus, LLMReflectionGenerator(client), LLMLessons(client))
