"""The same API for asyncio: each call runs the blocking one on a worker thread (`asyncio.to_thread`), so an event loop
never waits on the network and the client needs nothing beyond the standard library; streams are async iterators.

    from crucible_client.aio import AsyncCrucible
    crucible = AsyncCrucible()
    result = await crucible.execute("python", "print(6 * 7)")
    async with await crucible.create_session() as session:
        await session.run("x = 41")
"""

import asyncio
from typing import Any, AsyncIterator, Callable, Iterator, List, Optional, TypeVar, Union

from . import wire
from .client import JSON, Crucible, Session

T = TypeVar("T")
_END = object()


async def _aiter(make: Callable[[], Iterator[T]]) -> AsyncIterator[T]:
    """A blocking iterator drained on a worker thread, its items handed over one by one."""
    loop = asyncio.get_running_loop()
    queue: "asyncio.Queue[Any]" = asyncio.Queue()

    def drain() -> None:
        try:
            for item in make():
                loop.call_soon_threadsafe(queue.put_nowait, item)
        except BaseException as e:  # handed to the consumer, raised there
            loop.call_soon_threadsafe(queue.put_nowait, e)
        finally:
            loop.call_soon_threadsafe(queue.put_nowait, _END)

    loop.run_in_executor(None, drain)  # a consumer that stops early leaves it to drain the rest on its own
    while True:
        item = await queue.get()
        if item is _END:
            break
        if isinstance(item, BaseException):
            raise item
        yield item


class AsyncCrucible:
    """`Crucible`, awaitable."""

    def __init__(self, url: Optional[str] = None, token: Optional[str] = None, timeout: float = 120) -> None:
        self.sync = Crucible(url, token, timeout)

    async def execute(self, language: str, code: str, **options: Any) -> wire.ExecuteResult:
        return await asyncio.to_thread(self.sync.execute, language, code, **options)

    def execute_stream(self, language: str, code: str, **options: Any) -> AsyncIterator[JSON]:
        return _aiter(lambda: self.sync.execute_stream(language, code, **options))

    async def runtimes(self) -> List[wire.Runtime]:
        return await asyncio.to_thread(self.sync.runtimes)

    async def evaluate(self, language: str, code: str, testcases: List[JSON], **options: Any) -> wire.EvaluateResult:
        return await asyncio.to_thread(self.sync.evaluate, language, code, testcases, **options)

    async def reward(self, messages: List[JSON], **options: Any) -> wire.RewardResult:
        return await asyncio.to_thread(self.sync.reward, messages, **options)

    async def reward_batch(self, items: List[JSON]) -> JSON:
        return await asyncio.to_thread(self.sync.reward_batch, items)

    async def health(self) -> JSON:
        return await asyncio.to_thread(self.sync.health)

    async def create_session(self, language: Optional[str] = None, **options: Any) -> "AsyncSession":
        return AsyncSession(await asyncio.to_thread(self.sync.create_session, language, **options))

    def session(self, session_id: str) -> "AsyncSession":
        return AsyncSession(self.sync.session(session_id))

    async def sessions(self) -> List[wire.Session]:
        return await asyncio.to_thread(self.sync.sessions)

    async def snapshots(self) -> List[wire.Snapshot]:
        return await asyncio.to_thread(self.sync.snapshots)

    async def delete_snapshot(self, name: str) -> None:
        await asyncio.to_thread(self.sync.delete_snapshot, name)

    async def start_evaluation(self, fmt: str, problems: str, samples: Optional[str] = None,
                               **options: Any) -> wire.Evaluation:
        return await asyncio.to_thread(self.sync.start_evaluation, fmt, problems, samples, **options)

    async def evaluation_runs(self) -> List[wire.Evaluation]:
        return await asyncio.to_thread(self.sync.evaluation_runs)

    async def evaluation_run(self, evaluation_id: str) -> wire.Evaluation:
        return await asyncio.to_thread(self.sync.evaluation_run, evaluation_id)

    async def await_evaluation(self, evaluation_id: str, every_s: float = 1.0) -> wire.Evaluation:
        while True:
            run = await self.evaluation_run(evaluation_id)
            if run["state"] != "running":
                return run
            await asyncio.sleep(every_s)

    async def evaluation_results(self, evaluation_id: str) -> List[JSON]:
        return await asyncio.to_thread(self.sync.evaluation_results, evaluation_id)

    async def delete_evaluation(self, evaluation_id: str) -> None:
        await asyncio.to_thread(self.sync.delete_evaluation, evaluation_id)

    async def tools(self, fmt: str = "openai", tool_set: str = "all") -> List[JSON]:
        return await asyncio.to_thread(self.sync.tools, fmt, tool_set)

    async def call_tool(self, name: str, arguments: Union[str, JSON], session_id: Optional[str] = None) -> JSON:
        return await asyncio.to_thread(self.sync.call_tool, name, arguments, session_id)


class AsyncSession:
    """`Session`, awaitable; `async with` deletes the session at its end."""

    def __init__(self, sync: Session) -> None:
        self.sync = sync
        self.id = sync.id

    @property
    def info(self) -> Optional[wire.Session]:
        return self.sync.info

    async def __aenter__(self) -> "AsyncSession":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.delete()

    async def run(self, code: str, mode: Optional[str] = None, timeout_ms: Optional[int] = None) -> wire.CellResult:
        return await asyncio.to_thread(self.sync.run, code, mode, timeout_ms)

    async def refresh(self) -> wire.Session:
        return await asyncio.to_thread(self.sync.refresh)

    async def interrupt(self) -> bool:
        return await asyncio.to_thread(self.sync.interrupt)

    async def restart(self) -> wire.Session:
        return await asyncio.to_thread(self.sync.restart)

    async def delete(self) -> None:
        await asyncio.to_thread(self.sync.delete)

    async def write_file(self, path: str, data: Union[bytes, str]) -> None:
        await asyncio.to_thread(self.sync.write_file, path, data)

    async def read_file(self, path: str) -> bytes:
        return await asyncio.to_thread(self.sync.read_file, path)

    async def read_text(self, path: str) -> str:
        return await asyncio.to_thread(self.sync.read_text, path)

    async def list_files(self, directory: str = "") -> List[wire.FileEntry]:
        return await asyncio.to_thread(self.sync.list_files, directory)

    async def delete_file(self, path: str) -> None:
        await asyncio.to_thread(self.sync.delete_file, path)

    async def command(self, command: Union[str, List[str]], **options: Any) -> wire.CommandResult:
        return await asyncio.to_thread(self.sync.command, command, **options)

    def command_stream(self, command: Union[str, List[str]], **options: Any) -> AsyncIterator[JSON]:
        return _aiter(lambda: self.sync.command_stream(command, **options))

    async def start_process(self, command: Union[str, List[str]], stdin_open: bool = False,
                            pty: Optional[JSON] = None, **options: Any) -> wire.ProcessInfo:
        return await asyncio.to_thread(self.sync.start_process, command, stdin_open, pty, **options)

    async def processes(self) -> List[wire.ProcessInfo]:
        return await asyncio.to_thread(self.sync.processes)

    async def process_output(self, pid: int, start: int = 0, wait_ms: int = 0) -> wire.ProcessOutput:
        return await asyncio.to_thread(self.sync.process_output, pid, start, wait_ms)

    async def write_stdin(self, pid: int, data: str, close: bool = False) -> JSON:
        return await asyncio.to_thread(self.sync.write_stdin, pid, data, close)

    async def signal(self, pid: int, signal: str = "TERM") -> bool:
        return await asyncio.to_thread(self.sync.signal, pid, signal)

    async def ports(self) -> List[wire.PortInfo]:
        return await asyncio.to_thread(self.sync.ports)

    async def preview(self, port: int, ttl_s: int = 3600) -> wire.Preview:
        return await asyncio.to_thread(self.sync.preview, port, ttl_s)

    async def lock_network(self, allow: Optional[List[str]] = None) -> wire.Session:
        return await asyncio.to_thread(self.sync.lock_network, allow)

    async def pause(self) -> wire.PauseResult:
        return await asyncio.to_thread(self.sync.pause)

    async def resume(self) -> wire.PauseResult:
        return await asyncio.to_thread(self.sync.resume)

    async def fork(self, count: int = 1) -> List["AsyncSession"]:
        return [AsyncSession(s) for s in await asyncio.to_thread(self.sync.fork, count)]

    async def snapshot(self, name: str) -> wire.Snapshot:
        return await asyncio.to_thread(self.sync.snapshot, name)

    async def commit(self, tag: str) -> wire.CommitResult:
        return await asyncio.to_thread(self.sync.commit, tag)
