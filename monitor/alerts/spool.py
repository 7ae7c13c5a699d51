"""Remember, outside the store, the alerts sent while the store could not be written.

A ``store_unwritable`` alert is sent without the lifecycle (its state lives in the store
that just failed). So that the alert still resolves once the store works again, the alert
and the notifiers that were told are written to a small file in the spool folder; the next
run that completes hands them to the lifecycle (:meth:`AlertLifecycle.remember`), which
sends the firing through its outbox to the notifiers the send missed (a receiver that was
down too) and then resolves it as any other. The folder is ``$MONITOR_SPOOL_DIR``, else
``$XDG_STATE_HOME/retrieval-monitor/spool`` (``~/.local/state/...``). A spool the monitor
cannot write is logged and skipped: the alert itself has been sent.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from datetime import datetime
from pathlib import Path

from monitor.alerts.model import Alert
from monitor.errors import UsageError
from monitor.io import write_text_atomic
from monitor.logs import get_logger

log = get_logger("monitor.alerts")


def spool_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Return the spool folder named by the environment."""
    env = os.environ if environ is None else environ
    if env.get("MONITOR_SPOOL_DIR"):
        return Path(env["MONITOR_SPOOL_DIR"])
    state = env.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "retrieval-monitor" / "spool"


def spool(alert: Alert, told: Mapping[str, datetime], directory: Path) -> None:
    """Keep ``alert`` and when each notifier was told of it, for the next run to resolve:
    kept when no notifier was told too, so that the next run tells them."""
    body = {
        "alert": alert.to_dict(),
        "told": {name: moment.isoformat() for name, moment in told.items()},
    }
    try:
        directory.mkdir(parents=True, exist_ok=True)
        write_text_atomic(directory / f"{alert.fingerprint}.json", json.dumps(body))
    except OSError as error:
        log.warning("spool_failed", suite=alert.suite, rule=alert.rule, error=str(error))


def spooled(suite: str, directory: Path) -> Iterator[tuple[Alert, dict[str, datetime], Path]]:
    """Yield the spooled alerts of ``suite`` with their told notifiers and their file.

    A file that cannot be read is logged and removed.
    """
    if not directory.is_dir():
        return
    for path in sorted(directory.glob("*.json")):
        try:
            body = json.loads(path.read_text(encoding="utf-8"))
            alert = Alert.from_dict(body["alert"])
            told = {str(n): datetime.fromisoformat(at) for n, at in body["told"].items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError, UsageError):
            log.warning("spool_entry_dropped", file=str(path))
            path.unlink(missing_ok=True)
            continue
        if alert.suite == suite:
            yield alert, told, path
