"""The asyncio API (AsyncCrucible, AsyncSession) against a real server: calls run concurrently on one event loop."""

import asyncio
import os

from crucible_client import CrucibleError
from crucible_client.aio import AsyncCrucible


def test_concurrent_runs_a_stream_and_a_session_on_one_event_loop() -> None:
    async def main() -> None:
        crucible = AsyncCrucible(os.environ["CRUCIBLE_URL"], os.environ.get("CRUCIBLE_TOKEN"))
        runs = await asyncio.gather(*(crucible.execute("python", f"print({i} * 2)") for i in range(3)))
        assert [r["stdout"] for r in runs] == ["0\n", "2\n", "4\n"]
        events = [e async for e in crucible.execute_stream("python", "print('streamed')")]
        assert events[-1]["type"] == "result" and events[-1]["result"]["stdout"] == "streamed\n"
        async with await crucible.create_session("python") as s:
            await s.run("x = 41")
            assert (await s.run("x + 1"))["result"] == "42"
            await s.write_file("a.txt", "async")
            assert await s.read_text("a.txt") == "async"
            chunks = [e async for e in s.command_stream("echo hi")]
            assert chunks[-1]["result"]["exit_code"] == 0
        try:
            await s.run("1")
            raise AssertionError("the session was deleted")
        except CrucibleError as e:
            assert e.code == "session_not_found"

    asyncio.run(main())
