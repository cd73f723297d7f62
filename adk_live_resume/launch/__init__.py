"""Launch: how the resumable loop gets into a process."""
