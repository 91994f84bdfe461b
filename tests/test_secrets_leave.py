"""Secrets never leave (docs/guarantees.md, "Secrets"): each token shape and each value akira
knows is masked in every file it writes under `.state/`, `Logs/` and `Needs_Action/` and in the
review prompt; a step whose changes hold one is not committed, and is told why."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from akira_cli import redaction
from akira_cli.git.dotenv import values_in
from tests.support.fake_forge import Forge as FakeForge
from tests.support.git import git, git_workspace

GHP = "ghp_" + "Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0Lm9Nb"
SHAPES = {
    "GitHub": GHP,
    "GitHub app": "ghs_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "GitHub fine-grained": "github_pat_11AAAAAAA0" + "b" * 60,
    "GitLab": "glpat-" + "xY12zW34vU56tS78rQ90",
    "AWS key id": "AKIA" + "IOSFODNN7EXAMPLQ",
    "AWS session key id": "ASIA" + "Y34FZKBOKMUTVV7A",
    "Slack": "xoxb-" + "1234567890-0987654321-AbCdEfGhIjKlMnOp",
    "OpenAI": "sk-proj-" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8",
    "Anthropic": "sk-ant-api03-" + "Qr9St8Uv7Wx6Yz5Ab4Cd3Ef2",
    "Google": "AIza" + "SyD4f8E9g0H1i2J3k4L5m6N7o8P9q0R1s2T",
}
KEY_BODY = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onLRnrq0"
PRIVATE_KEY = f"-----BEGIN RSA PRIVATE KEY-----\n{KEY_BODY}\n-----END RSA PRIVATE KEY-----"
URL_PASSWORD = "Url-Pa55word-q1w2"
VALUES = {
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMIK7MDENGbPxRfiCYzEXAMPLEKEY",
    "DEPLOY_PASSWORD": "correct-horse-battery",
    "VAULT_CREDENTIALS": "vault-cred-5f6e7d8c",
}
DB_PASSWORD = "db-Pa55-w0rd-9x8y"
DOTENV = "webhook-value-31337-zz"
"""A value of the work tree's ignored `.env`, under a name that is not secret-like."""


@pytest.fixture
def clean_redaction() -> object:
    yield
    redaction.clear()


@pytest.mark.parametrize("kind", sorted(SHAPES))
def test_each_token_shape_is_masked_in_text_and_in_json_bytes(kind: str, clean_redaction: object) -> None:
    token = SHAPES[kind]
    line = f"the check printed {token} and went on"
    assert token not in redaction.redact(line) and "***" in redaction.redact(line)
    data = json.dumps({"output": line}).encode()
    assert token.encode() not in redaction.redact_bytes(data)


def test_a_private_key_block_and_a_urls_password_are_masked(clean_redaction: object) -> None:
    text = f"key:\n{PRIVATE_KEY}\nurl: postgresql://app:{URL_PASSWORD}@db.internal/app\n"
    for masked in (redaction.redact(text), redaction.redact_bytes(json.dumps(text).encode()).decode()):
        assert KEY_BODY not in masked and URL_PASSWORD not in masked
        assert "postgresql://app:***@db.internal/app" in masked


def test_values_of_secret_like_names_and_a_database_urls_password_are_known(clean_redaction: object) -> None:
    environ = {**VALUES, "DATABASE_URL": f"postgresql://app:{DB_PASSWORD}@db/app", "SHORT_TOKEN": "abc"}
    redaction.register(redaction.secret_values(environ))
    said = " ".join([*VALUES.values(), DB_PASSWORD, "abc"])
    masked = redaction.redact(said)
    assert all(value not in masked for value in [*VALUES.values(), DB_PASSWORD])
    assert masked.endswith(" abc")  # under 8 characters: ordinary words stay


def test_ordinary_text_is_left_alone(clean_redaction: object) -> None:
    text = (
        "max_tokens: 40000000; the task-sk-learn thing; https://example.com:443/path; "
        "ssh://git@host/repo; input_tokens=12345678; a ghp_short one"
    )
    assert redaction.redact(text) == text


def test_a_dotenv_files_values_are_read_with_quotes_and_comments_taken_off() -> None:
    text = "# a comment\nexport A='quoted value 1'\nB=\"two\"\nC=plain-value # note\n\nD=\n"
    assert values_in(text) == ["quoted value 1", "two", "plain-value", ""]


LEAK = r"""
import os, pathlib
dotenv = pathlib.Path(".env").read_text().split("=", 1)[1].strip()
said = [*os.environ["LEAK_SHAPES"].split(), os.environ["LEAK_KEY"], os.environ["DATABASE_URL"], dotenv]
said += [os.environ.get(name, "") for name in ("AWS_SECRET_ACCESS_KEY", "DEPLOY_PASSWORD")]
print("\n".join(said))
"""
AGENT = r"""
import os, pathlib, runpy, sys
prompt = pathlib.Path(sys.argv[1]).read_text()
shared = pathlib.Path(os.environ["LEAK_SHARED"])
count = len(list(shared.glob("prompt-*.md"))) + 1
(shared / f"prompt-{count}.md").write_text(prompt)
runpy.run_path(str(shared / "leak.py"))
if "hold a secret" in prompt:
    pathlib.Path("config.py").write_text("TOKEN = os.environ['GITHUB_TOKEN']\n")
else:
    pathlib.Path("config.py").write_text("import os\n\nTOKEN = '" + os.environ["LEAK_GHP"] + "'\n")
"""
REVIEWER = r"""
import json, os, pathlib, sys
shared = pathlib.Path(os.environ["LEAK_SHARED"])
count = len(list(shared.glob("review-*.md"))) + 1
(shared / f"review-{count}.md").write_text(sys.stdin.read())
print(json.dumps({"verdict": "approve", "reasons": ["fine"]}))
"""
TASKS = f"""
- [ ] 1. Write the config
  - Exists: `config.py`
- [ ] 2. Print what it knows
  - Verify: `{sys.executable} LEAK; exit 1`
"""


@pytest.mark.slow
def test_secrets_stay_out_of_every_file_akira_writes_and_out_of_the_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    leak = tmp_path / "leak.py"
    leak.write_text(textwrap.dedent(LEAK).lstrip())
    akira = git_workspace(tmp_path, TASKS.replace("LEAK", str(leak)))
    root = akira.root
    (root / ".gitignore").write_text(".env\n")
    (root / ".env").write_text(f"WEBHOOK={DOTENV}\n")
    agent, reviewer = tmp_path / "agent.py", tmp_path / "reviewer.py"
    agent.write_text(textwrap.dedent(AGENT).lstrip())
    reviewer.write_text(textwrap.dedent(REVIEWER).lstrip())
    for name, value in VALUES.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("DATABASE_URL", f"postgresql://app:{DB_PASSWORD}@db/app")
    monkeypatch.setenv("LEAK_SHAPES", " ".join(SHAPES.values()))
    monkeypatch.setenv("LEAK_KEY", PRIVATE_KEY)
    monkeypatch.setenv("LEAK_GHP", GHP)
    monkeypatch.setenv("LEAK_SHARED", str(tmp_path))
    forge = FakeForge(tmp_path, monkeypatch, ("gh",))
    git(tmp_path, "init", "-q", "--bare", str(tmp_path / "origin.git"))
    git(root, "remote", "add", "origin", str(tmp_path / "origin.git"))
    akira.write_config(
        f"agent:\n  kind: command\n  command: {json.dumps(f'{sys.executable} {agent} {{prompt_file}}')}\n"
        f"review:\n  agent: {json.dumps(f'{sys.executable} {reviewer}')}\n  when: ['1']\n"
        f"checks:\n  - run: {json.dumps(f'{sys.executable} {leak}')}\n    name: leaky\n"
        "git:\n  push: origin\n  pr: draft\n  pr_tool: gh\n"
        f"sandbox:\n  allow_write: [{str(tmp_path)!r}]\n"
        "  env: [DATABASE_URL, AWS_SECRET_ACCESS_KEY, DEPLOY_PASSWORD, LEAK_*]\n"
    )
    git(root, "add", ".gitignore", "config")
    git(root, "commit", "-qm", "config")
    done = akira.cli("loop", "start", "--task", "Specs/feat/tasks.md", timeout=240)
    assert done.code == 4, done.err  # step 2 fails every time: an escalation, a draft pull request
    # the first attempt's commit was refused, with the file, the line and the masked value
    state = akira.state()
    record = state.completed_steps[-1]
    assert record.step_id == "1" and record.attempts == 2, record
    retry = (tmp_path / "prompt-2.md").read_text()
    assert "config.py:3 holds a GitHub token (ghp_***)" in retry
    assert "Keep secrets out of the tree" in retry
    assert "take the secret out of the file, read it from the environment" in retry  # the reflection
    # nothing with the token was committed or pushed; the second attempt's fix was
    assert GHP not in git(root, "log", "-p", "--all")
    assert "os.environ['GITHUB_TOKEN']" in git(root, "show", "akira/feat:config.py")
    # no secret in any file akira wrote, in the prompts the agent and the reviewer got, in the
    # pull request's body
    secrets = [*SHAPES.values(), KEY_BODY, *VALUES.values(), DB_PASSWORD, DOTENV]
    written = [
        path
        for folder in (".state", "Logs", "Needs_Action")
        for path in (root / folder).rglob("*")
        if path.is_file()
    ]
    assert (root / "Needs_Action" / f"escalation_{state.task_id}.md") in written
    written += sorted(tmp_path.glob("prompt-*.md")) + sorted(tmp_path.glob("review-*.md"))
    assert len(list(tmp_path.glob("review-*.md"))) == 2
    assert "config.py" in (tmp_path / "review-1.md").read_text()  # the diff it reviewed
    leaked = [(str(path), s) for path in written for s in secrets if s.encode() in path.read_bytes()]
    assert leaked == [], "\n".join(map(str, leaked))
    bodies = [str(call["body"]) for call in forge.calls() if call["body"]]
    assert bodies and all(s not in body for body in bodies for s in secrets)
    assert all(s not in done.out + done.err for s in secrets)


def test_push_protection_reads_binary_files_and_file_names_and_decoded_url_passwords(
    tmp_path: Path, clean_redaction: object
) -> None:
    from akira_cli.git.pinned import Git
    from akira_cli.git.secret_scan import refuse_secrets
    from akira_cli.git.verify import CommitRefused
    from tests.support.git import first_commit

    (tmp_path / "README").write_text("base\n")
    first_commit(tmp_path)
    redaction.register(redaction.secret_values({"DATABASE_URL": "postgresql://app:p%40ss-w0rd-long@db/app"}))
    (tmp_path / "dump.bin").write_bytes(b"\x00\x01binary " + SHAPES["AWS key id"].encode() + b"\x00")
    (tmp_path / f"{GHP}.txt").write_text("nothing here\n")
    (tmp_path / "notes.txt").write_text("the password is p@ss-w0rd-long\n")
    index = tmp_path / "index"
    env = {"GIT_INDEX_FILE": str(index)}
    git_ = Git.found(tmp_path)
    assert git_ is not None
    git_.run("read-tree", "HEAD", env=env)
    names = ["dump.bin", f"{GHP}.txt", "notes.txt"]
    git_.run("update-index", "--add", "--", *names, env=env)
    with pytest.raises(CommitRefused) as refused:
        refuse_secrets(git_, env, names)
    said = str(refused.value)
    assert "dump.bin:1 holds an AWS access key id (AKIA***)" in said
    assert "the name ghp_***.txt holds a GitHub token (ghp_***)" in said
    assert "notes.txt:1 holds a known secret's value (***)" in said
    assert GHP not in said and "p@ss-w0rd-long" not in said
