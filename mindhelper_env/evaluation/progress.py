"""The progress bar of an evaluation run (episodes done, rate, ETA and, with prices or a
budget, the model spend) on stderr."""

from __future__ import annotations

from typing import Any

__all__ = ["Progress"]



class Progress:
    """A rich progress bar (episodes done, rate, ETA), or nothing."""

    def __init__(self, enabled: bool, description: str, total: int, completed: int, *,
                 spend: str | None = None) -> None:
        self._progress: Any = None
        self._task: Any = None
        if not enabled:
            return
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            ProgressColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        from rich.text import Text

        class _Rate(ProgressColumn):
            def render(self, task: Any) -> Text:
                speed = task.finished_speed or task.speed
                return Text("-- ep/s" if speed is None else f"{speed:.1f} ep/s")

        columns = [
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("episodes"),
            _Rate(),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
        ]
        if spend is not None:
            columns.append(TextColumn("{task.fields[spend]}"))
        self._progress = Progress(*columns, console=Console(stderr=True))
        self._progress.start()
        self._task = self._progress.add_task(description, total=total, completed=completed,
                                             spend=spend or "")

    def advance(self, n: int = 1, *, spend: str | None = None) -> None:
        if self._progress is not None:
            if spend is not None:
                self._progress.update(self._task, advance=n, spend=spend)
            else:
                self._progress.advance(self._task, n)

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
