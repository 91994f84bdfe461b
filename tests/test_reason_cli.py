"""`akira reason` end to end: the real CLI in-process, in a real workspace, against the fake server."""

from __future__ import annotations

import json
import socket

import pytest

from tests.support.reasoning import GOOD, LOW, NO_ISSUES, SIMPLE, Script, outcome, step
from tests.support.servers.fake_openai import FakeOpenAI
from tests.support.workspace import Akira

TASK = "add two numbers: 2 and 3"


@pytest.fixture(autouse=True)
def _no_llm_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The workspace file names the endpoint; the caller's environment would override it."""
    for name in ("OPENAI_BASE_URL", "OPENAI_API_BASE", "OPENAI_API_KEY", "AKIRA_MODEL"):
        monkeypatch.delenv(name, raising=False)


def use(akira: Akira, base_url: str, model: str = "fake-model") -> None:
    akira.write_config(
        f"llm:\n  base_url: {base_url}\n  model: {model}\n  max_retries: 0\n"
        "resource_limits:\n  max_api_calls_per_minute: 0\n"
    )


def converging() -> Script:
    return Script(
        profile=SIMPLE,
        plan={"steps": [step("s1", "Add 2 and 3")]},
        validate_plan=NO_ISSUES,
        validate_execution=NO_ISSUES,
        converge=GOOD,
        steps={"Add 2 and 3": outcome("2 + 3 = 5")},
    )


def expiring() -> Script:
    return Script(
        profile=SIMPLE,
        plan={"steps": [step("s1", "Add 2 and 3")]},
        validate_plan=NO_ISSUES,
        validate_execution=NO_ISSUES,
        converge=LOW,
        refine={"deltas": [{"op": "ADD", "step_id": "s2", "description": "Check", "dependencies": ["s1"]}]},
        steps={"Add 2 and 3": outcome("5"), "Check": outcome("2 + 3 = 5, checked")},
    )


def test_a_converged_run_prints_labelled_lines_then_the_answer(
    akira: Akira, fake_openai: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    use(akira, fake_openai.base_url)
    fake_openai.set_responder(converging())
    result = akira.run("reason", TASK, capsys=capsys)
    assert (result.code, result.err) == (0, "")
    lines = result.out.splitlines()
    assert lines[0] == "result: converged after 1 pass (TTL 2)"
    assert lines[1] == (
        "profile (inferred): depth 1, sufficiency 0.90, tools none, breadth narrow, confidence low"
    )
    assert "scores: completeness 1.00, coherence 0.95, consistency 0.95" in lines
    assert "reason codes: completeness_met, coherence_met, consistency_met" in lines
    assert lines[-4].startswith("LLM calls: 6, tokens: ")
    assert lines[-3:] == ["", "answer:", "2 + 3 = 5"]


def test_an_expired_ttl_is_labelled_not_converged(
    akira: Akira, fake_openai: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    use(akira, fake_openai.base_url)
    fake_openai.set_responder(expiring())
    result = akira.run("reason", TASK, capsys=capsys)
    assert (result.code, result.err) == (0, "")
    lines = result.out.splitlines()
    assert lines[0] == "result: ttl_expired (not converged) after 2 passes (TTL 2)"
    codes = next(line for line in lines if line.startswith("reason codes: "))
    assert "completeness_below_threshold" in codes and "ttl_expired" in codes
    assert "scores: completeness 0.40, coherence 0.95, consistency 0.95" in lines
    assert lines[-2:] == ["answer:", "2 + 3 = 5, checked"]


@pytest.mark.parametrize(("script", "converged"), [(converging, True), (expiring, False)])
def test_json_output_parses_and_carries_the_result(
    akira: Akira,
    fake_openai: FakeOpenAI,
    capsys: pytest.CaptureFixture[str],
    script: type[Script],
    converged: bool,
) -> None:
    use(akira, fake_openai.base_url)
    fake_openai.set_responder(script())
    result = akira.run("reason", TASK, "--json", capsys=capsys)
    assert (result.code, result.err) == (0, "")
    data = json.loads(result.out)
    assert data["converged"] is converged
    assert data["label"] == ("converged" if converged else "ttl_expired")
    assert data["answer"].startswith("2 + 3 = 5")
    assert data["profile"]["reasoning_depth"] == 1 and data["profile_source"] == "inferred"
    assert len(data["passes"]) == (1 if converged else 2)
    assert set(data["scores"]) == {"completeness", "coherence", "consistency"}
    assert data["reason_codes"] and data["calls"] > 0 and data["total_tokens"] > 0
    assert data["error"] is None and data["error_transient"] is False


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_an_unreachable_endpoint_is_one_line_and_exit_1(
    akira: Akira, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    use(akira, url)
    result = akira.run("reason", TASK, capsys=capsys)
    assert result.code == 1 and result.out == ""
    assert result.err.count("\n") == 1
    assert result.err.startswith(f"akira: error: LLM endpoint {url} is unreachable (connection refused)")


def test_an_unknown_model_is_named_with_the_available_ones(
    akira: Akira, fake_openai: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    use(akira, fake_openai.base_url, model="gpt-nope")
    result = akira.run("reason", TASK, capsys=capsys)
    assert result.code == 1 and result.out == ""
    assert result.err == (
        f"akira: error: LLM model 'gpt-nope' not found at {fake_openai.base_url}; "
        "set llm.model or AKIRA_MODEL to one of: fake-model\n"
    )
    assert fake_openai.chat_requests == []
