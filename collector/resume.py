"""What ``collector run --resume`` may be told: the flags a resumed run takes from its own record.

A resumed run keeps the settings it was recorded with (suite, processes, --only,
device, time budget, image), so its cases stay comparable with each other. A flag
given with ``--resume`` that disagrees with the record is refused; one that agrees is
fine; flags that cannot change what is measured are used (``--case-timeout``,
``--data-dir``) or ignored (``--out``: the run stays in its folder), and named.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from runformat.redact import redact_image
from runformat.schema import ENVIRONMENT_FILE


def recorded_settings(folder: Path) -> tuple[dict[str, str], str | None]:
    """The run entries (section ``run``) and the image name recorded in ``folder``'s environment."""
    from runformat.archive import read_table

    table, _ = read_table(Path(folder) / ENVIRONMENT_FILE, ENVIRONMENT_FILE)
    rows = table.to_pylist()
    run = {r["key"]: r["value"] for r in rows if r["section"] == "run"}
    image = next((r["value"] for r in rows if (r["section"], r["key"]) == ("container", "image")), None)
    return run, image


def check_resume_flags(run: Mapping[str, str], image: str | None, given: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """(conflicts, notes) for the flags in ``given`` (only those the user gave) against the record.

    ``given`` keys: suite, processes, only, device, time_budget, image, out, case_timeout, data_dir.
    """
    conflicts: list[str] = []
    notes: list[str] = []

    def differs(flag: str, value: Any, recorded: Any, shown: Any = None) -> None:
        if value != recorded:
            conflicts.append(f"{flag} {shown if shown is not None else value} conflicts with the run's recorded "
                             f"{'none' if recorded in (None, '', []) else recorded}")

    if given.get("suite") is not None:
        differs("--suite", given["suite"], run.get("suite") or None)
    if given.get("processes") is not None:
        differs("--processes", int(given["processes"]), _int(run.get("processes")))
    if given.get("only"):
        recorded_only = sorted(json.loads(run.get("only") or "[]"))
        differs("--only", sorted(given["only"]), recorded_only, " ".join(given["only"]))
    if given.get("device") is not None:
        differs("--device", given["device"], run.get("device") or None)
    if given.get("time_budget") is not None:
        differs("--time-budget", float(given["time_budget"]), _float(run.get("time_budget")), f"{given['time_budget']:g}")
    if given.get("image") is not None:
        shown = redact_image(str(given["image"]))
        differs("--image", shown, image, repr(shown))
    if given.get("out") is not None:
        notes.append(f"--out {given['out']} is ignored: a resumed run stays in its own folder")
    if given.get("case_timeout") is not None:
        notes.append(f"--case-timeout {given['case_timeout']:g} applies to the cases still to run")
    if given.get("data_dir") is not None:
        notes.append(f"--data-dir {given['data_dir']} is read by the cases still to run (the run does not record "
                     "which data its first cases read)")
    return conflicts, notes


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text else None
    except ValueError:
        return None


def _float(text: str | None) -> float | None:
    try:
        return float(text) if text else None
    except ValueError:
        return None
