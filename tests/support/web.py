"""`akira web` for the tests: the server as a process (its URL read from the line it prints),
plain HTTP requests with exactly the headers a test forges, and a real headless Chromium
driven by Selenium (Debian's `chromium` and `chromium-driver`; `.ci/run` installs them)."""

from __future__ import annotations

import contextlib
import http.client
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.mcp import server_env

WAIT = 60.0
"""Seconds a browser test waits for a condition (two cores shared with other work)."""
PHONE = (390, 844)
TALLEST = 4000
"""A screenshot shows the page down to this height, so its charts and tables are in it."""


@dataclass
class Served:
    url: str
    """`http://HOST:PORT/`, as the server printed it (without the token)."""
    line: str
    process: subprocess.Popen[str]
    token: str = ""
    """The token in the printed URL, when akira made it."""

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1].split("/")[0])


@contextlib.contextmanager
def web_server(root: Path, *args: str, address: str = "127.0.0.1:0") -> Iterator[Served]:
    """`akira web --http ADDRESS` as a process, until the block ends."""
    process = subprocess.Popen(
        [sys.executable, "-m", "akira_cli", "web", "--root", str(root), "--http", address, *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=server_env(),
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()  # blocks until it listens (or exits: an empty line)
        found = re.search(r"(http://(?:\[[0-9a-f:]+\]|[0-9.]+):\d+/)(?:\?token=(\S+))?", line)
        assert found, f"no URL in {line!r}"
        yield Served(found.group(1), line, process, found.group(2) or "")
    finally:
        process.terminate()
        process.wait(timeout=30)


def request(
    port: int, method: str, path: str, headers: dict[str, str], body: str = "", host: str = "127.0.0.1"
) -> tuple[int, dict[str, str], str]:
    """The status, headers and body of one request to `host:port` with exactly `headers`."""
    connection = http.client.HTTPConnection(host, port, timeout=30)
    try:
        connection.request(method, path, body.encode() if body else None, headers=headers)
        response = connection.getresponse()
        text = response.read(65536).decode("utf-8", errors="replace")
        return response.status, {k.lower(): v for k, v in response.getheaders()}, text
    finally:
        connection.close()


def browser_paths() -> tuple[str, str]:
    """Chromium and its driver; a missing one fails the test (never a skip) with how to get it."""
    found = [shutil.which(name) for name in ("chromium", "chromedriver")]
    if found[0] is None or found[1] is None:
        raise AssertionError(
            "the browser tests need Debian's chromium and chromium-driver: "
            "apt-get update && apt-get install -y chromium chromium-driver"
        )
    return found[0], found[1]


@contextlib.contextmanager
def chromium(profile: Path, width: int = 1280, height: int = 900) -> Iterator[Any]:
    """A headless Chromium with its own profile in `profile`, driven by Selenium."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    binary, driver_path = browser_paths()
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for argument in (
        "--headless=new",
        "--no-sandbox",  # root in a container has no user namespace for Chromium's own sandbox
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--no-first-run",
        f"--user-data-dir={profile}",
        f"--window-size={width},{height}",
    ):
        options.add_argument(argument)
    os.environ.setdefault("SE_AVOID_STATS", "true")
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    try:
        driver.set_page_load_timeout(WAIT)
        yield driver
    finally:
        driver.quit()


def until(driver: Any, what: str, condition: Callable[[Any], Any], timeout: float = WAIT) -> Any:
    """Waits for `condition(driver)` to be truthy, and returns it; fails naming `what`."""
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.wait import WebDriverWait

    try:
        return WebDriverWait(driver, timeout, poll_frequency=0.1).until(condition)
    except TimeoutException:
        raise AssertionError(f"timed out waiting for {what}; the page: {driver.page_source[:3000]}") from None


def confirm(driver: Any) -> None:
    """Accepts the page's confirmation dialog."""
    from selenium.webdriver.support import expected_conditions

    until(driver, "the confirmation", expected_conditions.alert_is_present()).accept()


def artefacts(tmp_path: Path) -> Path:
    """Where a test keeps its screenshots: `$AKIRA_TEST_ARTEFACTS` when set (CI keeps it), else
    the test's folder."""
    folder = Path(os.environ.get("AKIRA_TEST_ARTEFACTS") or tmp_path) / "web"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def shoot(driver: Any, folder: Path, name: str) -> None:
    """A screenshot of the whole page (down to `TALLEST`) at desktop width, then at phone
    width (where nothing is wider than the screen), then back."""
    for width, height, kind in ((1280, 900, "desktop"), (*PHONE, "phone")):
        driver.set_window_size(width, height)
        until(
            driver, f"the {kind} width", lambda d, w=width: d.execute_script("return window.innerWidth") <= w
        )
        if kind == "phone":
            wide = driver.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
            assert wide <= 1, f"{name} is {wide}px wider than a phone"
        tall = driver.execute_script("return document.documentElement.scrollHeight")
        driver.set_window_size(width, min(TALLEST, max(height, tall + 120)))
        driver.save_screenshot(str(folder / f"{name}-{kind}.png"))
    driver.set_window_size(1280, 900)


def fake_claude(path: Path, gates: Path | None = None) -> str:
    """A stand-in for `claude -p --output-format json` at `path`, and the config that uses it:
    it reads its prompt, waits for `gates`/gate_STEP when `gates` is given, writes done_STEP
    and answers with its usage (1,500 tokens, $0.25), as the claude preset reads it."""
    wait = f'while [ ! -e {gates}/gate_"$AKIRA_STEP_ID" ]; do sleep 0.05; done\n' if gates else ""
    path.write_text(
        f'cat > /dev/null\n{wait}touch "done_$AKIRA_STEP_ID"\n'
        """echo '{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"s1",'"""
        """'"num_turns":1,"total_cost_usd":0.25,"usage":{"input_tokens":1000,"output_tokens":500}}'\n"""
    )
    return f'agent:\n  kind: command\n  preset: claude\n  command: "sh {path}"\n'
