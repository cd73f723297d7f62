"""What the run does once a connection ended, for every end (no sockets).

End to end, ``LiveRun._connections`` carries it out (``tests/e2e/test_resume_e2e.py``, the
transfer and rerun tests, the soaks).
"""

from __future__ import annotations

import pytest

from adk_live_resume.observe.connection_end import AfterEnd, End, after_end

EXPECTED = {
    End.CLIENT_CLOSED: ("over", False),
    End.TASK_COMPLETED: ("over", False),
    End.TRANSFER: ("next_run", False),
    End.RERUN: ("next_run", False),
    End.STALLED: ("reconnect", False),
    End.DROPPED: ("reconnect", True),
    End.MOVED: ("reconnect", True),
}


@pytest.mark.parametrize("end", list(End))
@pytest.mark.parametrize("turn_open", [False, True])
def test_what_follows_each_end(end: End, turn_open: bool) -> None:
    then, lost = EXPECTED[end]
    assert after_end(end, turn_open=turn_open) == AfterEnd(
        keeps_opening=lost, interrupted=turn_open and lost, then=then
    )
