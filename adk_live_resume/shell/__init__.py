"""The live shell: the loop, its connections and their I/O."""
