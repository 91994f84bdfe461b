"""Token and cost accounting, shared by the LLM client, the state file and budgets."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel

from akira_cli.errors import BudgetExceeded

if TYPE_CHECKING:
    from akira_cli.sections import BudgetSettings


class Usage(BaseModel):
    prompt_tokens: int = 0
    """Input tokens, cached ones included."""
    completion_tokens: int = 0
    cached_tokens: int = 0
    """The cached part of `prompt_tokens`, kept on its own."""
    calls: int = 0
    estimated_calls: int = 0
    """Calls whose tokens are estimated from the text: the server sent no usage."""
    cost_usd: float = 0.0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def add(self, other: Usage) -> None:
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.cached_tokens += other.cached_tokens
        self.calls += other.calls
        self.estimated_calls += other.estimated_calls
        self.cost_usd += other.cost_usd

    def since(self, before: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens - before.prompt_tokens,
            completion_tokens=self.completion_tokens - before.completion_tokens,
            cached_tokens=self.cached_tokens - before.cached_tokens,
            calls=self.calls - before.calls,
            estimated_calls=self.estimated_calls - before.estimated_calls,
            cost_usd=self.cost_usd - before.cost_usd,
        )


def check_budget(budget: BudgetSettings, used: Usage) -> None:
    """Raises `BudgetExceeded` once `used` reaches the token or the cost budget."""
    if budget.max_tokens_total is not None and used.total_tokens >= budget.max_tokens_total:
        raise BudgetExceeded(
            f"token budget of {budget.max_tokens_total} used up ({used.total_tokens} tokens); "
            "raise budget.max_tokens_total to continue"
        )
    if budget.max_cost_usd is not None and used.cost_usd >= budget.max_cost_usd:
        raise BudgetExceeded(
            f"cost budget of ${budget.max_cost_usd:g} used up (${used.cost_usd:.4f}); "
            "raise budget.max_cost_usd to continue"
        )
