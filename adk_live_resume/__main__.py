"""``python -m adk_live_resume [OPTIONS] COMMAND | -m MODULE``: see :mod:`.launch.launcher`."""

from __future__ import annotations

import sys

from .launch.launcher import main

if __name__ == "__main__":
    sys.exit(main())
