"""The client's TypedDicts (crucible_client.wire, generated from the server's OpenAPI document) against what a real
server answers: every key an answer carries is a key of its type, and every key the type requires is there, nested
shapes included. A field the server adds and the document (so the client) lacks fails here, as does a field the
document says is always sent and is not."""

import typing
from typing import Any, List

from crucible_client import Crucible, wire


def _shape(kind: Any) -> Any:
    """The TypedDict (or List of one) inside an annotation, or None."""
    if isinstance(kind, typing.ForwardRef):
        kind = getattr(wire, kind.__forward_arg__)
    if isinstance(kind, type) and hasattr(kind, "__required_keys__"):
        return kind
    for arg in typing.get_args(kind):
        found = _shape(arg)
        if found is not None:
            return found
    return None


def mismatches(value: Any, kind: Any, at: str) -> List[str]:
    """Where `value` differs from the TypedDict `kind`: keys it does not know, keys it requires and misses."""
    shape = _shape(kind)
    if shape is None:
        return []
    if isinstance(value, list):
        return [m for i, item in enumerate(value) for m in mismatches(item, kind, f"{at}[{i}]")]
    if not isinstance(value, dict):
        return []
    hints = typing.get_type_hints(shape, vars(wire))
    found = [f"{at} ({shape.__name__}) has unknown key {k!r}" for k in value if k not in hints]
    found += [f"{at} ({shape.__name__}) lacks required key {k!r}" for k in shape.__required_keys__ if k not in value]
    for key, item in value.items():
        if key in hints and item is not None:
            found += mismatches(item, hints[key], f"{at}.{key}")
    return found


def test_answers_have_exactly_the_keys_of_their_types(crucible: Crucible) -> None:
    problems = mismatches(crucible.execute("python", "print(1)"), wire.ExecuteResult, "execute")
    problems += mismatches(crucible.execute("c", "int main(void) { return 3 }"), wire.ExecuteResult, "compile")
    problems += mismatches(crucible.runtimes(), wire.Runtime, "runtimes")
    problems += mismatches(crucible.evaluate("python", "print(input())", [{"stdin": "1", "expect": "1"},
                                                                          {"stdin": "2", "expect": "3"}]),
                           wire.EvaluateResult, "evaluate")
    with crucible.create_session() as session:
        problems += mismatches(session.info, wire.Session, "create")
        problems += mismatches(session.run("x = 1"), wire.CellResult, "cell")
        problems += mismatches(session.run("1 / 0"), wire.CellResult, "failed cell")
        problems += mismatches(session.command("echo hi"), wire.CommandResult, "command")
        process = session.start_process(["sleep", "60"], pty={"rows": 24, "cols": 80})
        problems += mismatches(process, wire.ProcessInfo, "process")
        problems += mismatches(session.process_output(process["pid"]), wire.ProcessOutput, "output")
        session.signal(process["pid"], "KILL")
        session.write_file("a.txt", "a")
        problems += mismatches(session.list_files(), wire.FileEntry, "files")
        problems += mismatches(session.refresh(), wire.Session, "get")
        problems += mismatches(session.pause(), wire.PauseResult, "pause")
        problems += mismatches(session.resume(), wire.PauseResult, "resume")
        problems += mismatches(session.snapshot("wire-test"), wire.Snapshot, "snapshot")
        crucible.delete_snapshot("wire-test")
    assert problems == []


def test_the_check_catches_a_key_out_of_place() -> None:
    assert mismatches({"port": 1, "path": "/", "extra": 2}, wire.PortInfo, "p") == [
        "p (PortInfo) has unknown key 'extra'"]
    assert mismatches([{"port": 1}], List[wire.PortInfo], "p") == ["p[0] (PortInfo) lacks required key 'path'"]
