"""Configuration: one pydantic model per section, layered defaults < file < --config < flags < env.

Unknown keys and wrong types are refused with the key and the file named, and a near spelling
suggested. Field docstrings double as the documentation of `config/autonomous_loop.yaml`.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from akira_cli import redaction
from akira_cli.errors import AkiraError

CONFIG_RELPATH = Path("config/autonomous_loop.yaml")


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class LoopSettings(Section):
    """The seed's `autonomous_loop:` keys."""

    max_iterations: int = Field(100, ge=1)
    """Attempts allowed over the whole task."""
    parallel: int = Field(1, ge=1, le=64)
    """How many `[P]` steps of a wave run at once, each in its own git worktree (SPEC 13)."""
    failure_threshold: int = Field(3, ge=1)
    """Failed attempts in a row before escalating."""
    timeout_seconds: float = Field(3600, gt=0)
    """Wall-clock seconds of work allowed for the task (summed over runs)."""
    reinject_every_n_iterations: int = Field(10, ge=1)
    reinject_after_failure: bool = True
    reinject_if_stale_seconds: float = Field(300, ge=0)
    state_directory: str = ".state"
    save_state_every_iteration: bool = True
    """The state is always saved after every iteration; false is accepted for the seed's sake."""
    backup_state_every_n_iterations: int = Field(10, ge=0)
    """0 disables backups."""
    check_done_folder: bool = True
    check_needs_action_folder: bool = True
    check_stop_hook: bool = True
    log_every_iteration: bool = True
    create_progress_reports: bool = True
    progress_report_every_n_iterations: int = Field(25, ge=1)
    retry_failed_steps: bool = True
    max_step_retries: int = Field(3, ge=0)
    """Transient retries (with backoff) per attempt; they cost no iteration."""
    exponential_backoff: bool = True
    auto_move_to_done: bool = True
    create_completion_report: bool = True
    archive_state_file: bool = True
    no_progress_threshold: int = Field(3, ge=1)
    """Attempts in a row that change no file and pass no check stop the loop (no_progress)."""


class ResourceLimits(Section):
    max_memory_mb: int = 1024
    max_cpu_percent: int = 80
    max_disk_writes_per_minute: int = 100
    max_api_calls_per_minute: int = Field(60, ge=0)
    """0 means unlimited."""


class AgentSettings(Section):
    kind: Literal["auto", "script", "command", "llm", "claude", "codex", "gemini", "aider"] = "auto"
    command: str | None = None
    """External agent CLI, e.g. `claude -p`; `{prompt_file}` is replaced by the prompt's path."""
    workdir: str | None = None
    """Where agents run, relative to the workspace root."""
    transient_exit_codes: list[int] = Field(default_factory=list)
    command_timeout_seconds: float = Field(600, gt=0)
    """Default seconds for each command when a step has no `Timeout:`."""
    allow_run_command: bool = True
    """Whether the llm agent may use its `run_command` tool."""
    max_tool_output_chars: int = Field(8000, ge=256)
    preset: Literal["claude", "codex", "gemini", "aider"] | None = None
    """An agent CLI akira knows: its flags, its output, its usage and cost (implies `command`)."""
    permission_mode: str | None = None
    """claude: --permission-mode (default acceptEdits); gemini: `bypass` adds --yolo."""
    extra_args: list[str] = Field(default_factory=list)
    """Flags added to the preset's command line."""
    session: Literal["fresh", "continue"] = "fresh"
    """fresh: a new conversation per attempt; continue: resume the step's last one (claude, codex)."""
    max_limit_wait_seconds: float = Field(21600, ge=0)
    """The longest wait for an agent CLI's usage limit to reset before asking a person."""


class ModelPrice(Section):
    input_per_1m: float = Field(0.0, ge=0)
    output_per_1m: float = Field(0.0, ge=0)

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.input_per_1m + completion_tokens * self.output_per_1m) / 1_000_000


class LLMSettings(Section):
    base_url: str | None = None
    api_key: SecretStr | None = None
    model: str | None = None
    temperature: float = 0.0
    timeout: float = Field(60, gt=0)
    max_retries: int = Field(4, ge=0)
    """Transient retries for each request (connection errors, timeouts, 408/409/429/5xx)."""
    retry_after_cap_seconds: float = Field(900, ge=0)
    """The longest Retry-After wait honoured, even beyond the SDK's own limit."""
    max_tokens: int = Field(4096, ge=16)
    """The most tokens one reply may have (judge, reflection and profile replies get less). A
    reply cut there is a failed attempt, never retried as it was: small models loop."""
    prices: dict[str, ModelPrice] = Field(default_factory=dict)


class ReflectionSettings(Section):
    enabled: bool = True
    max_iterations: int = Field(3, ge=1)
    """Attempts per step before the step counts as failed."""
    use_llm: bool = True
    max_reflections_in_prompt: int = Field(3, ge=0)
    max_output_chars: int = Field(2000, ge=200)
    """Bound on command output carried into a retry prompt."""


class EvaluationSettings(Section):
    confidence_threshold: float = Field(0.8, ge=0, le=1)
    llm_judge: bool = False
    require_checks: bool = False
    """A step with no Verify/Exists/Contains line and no project check fails with "no check"."""


class ReasoningSettings(Section):
    mode: Literal["adaptive", "full", "direct"] = "adaptive"
    """How deep the `llm` agent goes (SPEC 9, Cost: depth is earned). adaptive: a step with host
    checks is first tried in one tool conversation, and the whole engine runs on a retry (or from
    the start for a step without checks); full: the engine on every attempt; direct: never."""
    max_passes: int = Field(6, ge=1)
    """Global cap on execution passes (the TTL never exceeds it)."""
    max_nesting_depth: int = Field(5, ge=1)
    max_refinements_per_fragment: int = Field(3, ge=0)
    max_refinements_total: int = Field(10, ge=0)
    completeness_threshold: float = Field(0.95, ge=0, le=1)
    coherence_threshold: float = Field(0.90, ge=0, le=1)
    consistency_threshold: float = Field(0.90, ge=0, le=1)
    custom_criteria: dict[str, float] = Field(default_factory=dict)
    max_parallel_steps: int = Field(4, ge=1)


class BudgetSettings(Section):
    max_tokens_total: int | None = Field(None, ge=1)
    max_cost_usd: float | None = Field(None, gt=0)


class NotifySettings(Section):
    command: str | None = None
    """Run (bash -c) when a loop completes, needs action, pauses or waits for a usage limit."""
    timeout: float = Field(30, gt=0)


class GitSettings(Section):
    """Git-native runs (SPEC 12): a task branch, one commit per completed step."""

    enabled: Literal["auto", True, False] = "auto"
    """auto: when the task file lies in a git work tree; true: required (an error elsewhere)."""
    branch: str = "akira/{feature}"
    """The task branch ({feature} and {task_id} are filled in); "" commits on the current branch."""
    failed_attempt: Literal["keep", "reset"] = "keep"
    """What a failed attempt's changes become: kept for the next attempt, or reset (the patch is
    saved either way)."""
    verify: bool = True
    """Run the repository's commit hooks; false skips them."""
    push: str | None = None
    """A remote to push the task branch to after each commit; none by default."""
    worktree_link: list[str] = Field(default_factory=lambda: ["node_modules", ".venv", "venv"])
    """Folders a parallel step's worktree links to instead of copying (SPEC 13)."""

    @field_validator("enabled", mode="before")
    @classmethod
    def _yaml_words(cls, value: Any) -> Any:
        return {"true": True, "false": False}.get(value, value) if isinstance(value, str) else value


class FleetSettings(Section):
    """The fleet (SPEC 14): task files on a durable queue, worked by workers on many machines."""

    database_url: str | None = None
    """The queue's database: a SQLite file (default `.state/fleet.sqlite`) or postgresql://…"""
    work_dir: str = "~/.cache/akira/fleet"
    """Where a worker clones the runs' repositories."""
    worker_timeout_seconds: float = Field(60, gt=0)
    """A run whose worker has been silent this long is recovered by a live worker."""
    setup: str = ""
    """A command run in each fresh clone before the first step (`pip install -e .`, `npm ci`)."""


class ProjectCheck(Section):
    run: str
    name: str | None = None
    timeout: float | None = Field(None, gt=0)

    @property
    def label(self) -> str:
        return self.name or self.run


class Config(Section):
    autonomous_loop: LoopSettings = Field(default_factory=LoopSettings)
    resource_limits: ResourceLimits = Field(default_factory=ResourceLimits)
    agent: AgentSettings = Field(default_factory=AgentSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    reflection: ReflectionSettings = Field(default_factory=ReflectionSettings)
    evaluation: EvaluationSettings = Field(default_factory=EvaluationSettings)
    reasoning: ReasoningSettings = Field(default_factory=ReasoningSettings)
    budget: BudgetSettings = Field(default_factory=BudgetSettings)
    checks: list[ProjectCheck] = Field(default_factory=list)
    notify: NotifySettings = Field(default_factory=NotifySettings)
    git: GitSettings = Field(default_factory=GitSettings)
    fleet: FleetSettings = Field(default_factory=FleetSettings)

    @field_validator("checks", mode="before")
    @classmethod
    def _plain_commands(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [{"run": item} if isinstance(item, str) else item for item in value]
        return value

    def public_dict(self) -> dict[str, Any]:
        """The effective configuration with secrets masked."""
        data = self.model_dump(mode="json")
        if self.llm.api_key is not None:
            data["llm"]["api_key"] = "****"
        if self.fleet.database_url:
            from akira_cli.redaction import url_without_password

            data["fleet"]["database_url"] = url_without_password(self.fleet.database_url)
        return data


def load_config(
    root: Path,
    extra_file: Path | None = None,
    overrides: dict[str, Any] | None = None,
    environ: dict[str, str] | None = None,
) -> Config:
    """Layers: defaults, the workspace file, `--config FILE`, CLI flags, then the environment."""
    merged: dict[str, Any] = {}
    sources: list[Path] = []
    workspace_file = root / CONFIG_RELPATH
    for path in (workspace_file, extra_file):
        if path is None:
            continue
        if path is extra_file and not path.is_file():
            raise AkiraError(f"{path}: config file not found; check the --config path")
        if path.is_file():
            data = _read_yaml(path)
            _validate_layer(data, path)
            _deep_merge(merged, data)
            sources.append(path)
    for dotted, value in (overrides or {}).items():
        if value is not None:
            _set_dotted(merged, dotted, value)
    _apply_env(merged, os.environ if environ is None else environ)
    try:
        config = Config.model_validate(merged)
    except ValidationError as exc:
        where = sources[-1] if sources else "command line"
        raise AkiraError(_explain(exc, where)) from None
    if config.llm.api_key is not None:
        redaction.register([config.llm.api_key.get_secret_value()])
    return config


def _read_yaml(path: Path) -> dict[str, Any]:
    from akira_cli import safeyaml

    try:
        data = safeyaml.load(path.read_bytes().decode("utf-8"))
    except OSError as exc:
        raise AkiraError(f"{path}: cannot read config ({exc.strerror}); check permissions") from None
    except UnicodeDecodeError:
        raise AkiraError(f"{path}: config is not UTF-8 text; save it as YAML in UTF-8") from None
    except safeyaml.BoundsError as exc:
        raise AkiraError(f"{path}: config refused: {exc}; keep it a plain YAML mapping") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" line {mark.line + 1}" if mark else ""
        raise AkiraError(f"{path}:{line} is not valid YAML; fix the syntax there") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise AkiraError(f"{path}: config must be a mapping of sections, e.g. 'autonomous_loop:'")
    _refuse_nul(data, path, [])
    return data


def _refuse_nul(value: Any, path: Path, keys: list[str]) -> None:
    """A NUL byte in a value would end up in a path or a command line; refuse it by name."""
    if isinstance(value, str) and "\x00" in value:
        raise AkiraError(f"{path}: '{'.'.join(keys)}' holds a NUL byte; remove it")
    if isinstance(value, dict):
        for key, item in value.items():
            _refuse_nul(item, path, [*keys, str(key)])
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _refuse_nul(item, path, [*keys, str(index)])


def _validate_layer(data: dict[str, Any], path: Path) -> None:
    try:
        Config.model_validate(data)
    except ValidationError as exc:
        raise AkiraError(_explain(exc, path)) from None


def _explain(exc: ValidationError, where: object) -> str:
    error = exc.errors()[0]
    loc = [str(part) for part in error["loc"]]
    key = ".".join(loc)
    if error["type"] == "extra_forbidden":
        hint = _suggest(loc)
        fix = f" (did you mean '{hint}'?)" if hint else "; remove it or check the spelling"
        return f"{where}: unknown key '{key}'{fix}"
    given = error.get("input")
    shown = "" if isinstance(given, dict | list) else f" (got {given!r})"
    return f"{where}: key '{key}': {error['msg'].lower()}{shown}; fix the value in that file"


def _suggest(loc: list[str]) -> str | None:
    model: type[BaseModel] = Config
    for part in loc[:-1]:
        field = model.model_fields.get(part)
        annotation = field.annotation if field else None
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return None
        model = annotation
    close = difflib.get_close_matches(loc[-1], list(model.model_fields), n=1, cutoff=0.6)
    return ".".join([*loc[:-1], close[0]]) if close else None


def _deep_merge(into: dict[str, Any], data: dict[str, Any]) -> None:
    for key, value in data.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _deep_merge(into[key], value)
        else:
            into[key] = value


def _set_dotted(into: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, leaf = dotted.split(".")
    for part in parents:
        into = into.setdefault(part, {})
    into[leaf] = value


def _apply_env(merged: dict[str, Any], environ: Any) -> None:
    base_url = environ.get("OPENAI_BASE_URL") or environ.get("OPENAI_API_BASE")
    pairs = {
        "llm.base_url": base_url,
        "llm.api_key": environ.get("OPENAI_API_KEY"),
        "llm.model": environ.get("AKIRA_MODEL"),
    }
    for dotted, value in pairs.items():
        if value:
            _set_dotted(merged, dotted, value)
    for name, dotted in (("AKIRA_GIT_PUSH", "git.push"), ("AKIRA_GIT_BRANCH", "git.branch")):
        if name in environ:  # set by a fleet worker for the loops it runs ("" is a value)
            _set_dotted(merged, dotted, environ[name])
