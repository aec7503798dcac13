"""The server the tests run against: $CRUCIBLE_URL (and $CRUCIBLE_TOKEN), set by AgentToolsTest, which starts one."""

import os

import pytest

from crucible_client import Crucible


@pytest.fixture
def crucible() -> Crucible:
    url = os.environ.get("CRUCIBLE_URL")
    assert url, "CRUCIBLE_URL names the server these tests run against (AgentToolsTest starts one)"
    return Crucible(url, os.environ.get("CRUCIBLE_TOKEN"))
