"""The live shell: the loop, its connections and their I/O.

The replacement ``run_live`` (``loop``) and everything that does I/O around one live
conversation: opening each connection (``connection_request``, ``connector``, ``early_dial``,
``next_connection``, ``pacing``, ``connect_params``), serving it (``serve_connection``,
``connection_watch``, ``stall_watch``, ``tool_traffic``, ``background_calls``), the request
queue (``queue_guard``), what the run holds and counts across connections (``run_rules``,
``reconnects``, ``run_tally``), a transfer's next run (``next_run``) and the moves an app asks
for (``steering``). The shell may import every folder but the fault proxy and launch (and
never the test kit); it asks the rules for every decision and carries it out.
"""
