"""Pure rules and decisions of the live loop: values in, values out, no I/O."""
