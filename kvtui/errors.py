"""Errors that mean "the input is wrong": the CLI prints them as `file:line: message`, exit 2."""

from __future__ import annotations


class InputError(Exception):
    """Bad user input (scenario, trace, WAL, command line). Never shown as a traceback.

    `problems` is a list of (file, line, message); `line` may be None when unknown.
    """

    def __init__(self, problems: list[tuple[str, int | None, str]]):
        self.problems = list(problems)
        super().__init__(self.render())

    @classmethod
    def one(cls, file: str, line: int | None, message: str) -> "InputError":
        return cls([(file, line, message)])

    def render(self) -> str:
        lines = []
        for file, line, message in self.problems:
            where = f"{file}:{line}" if line is not None else f"{file}"
            lines.append(f"{where}: {message}")
        return "\n".join(lines)
