"""Fault proxy: a fault-injecting TLS websocket proxy in front of any Live endpoint.

``proxy`` relays Live websockets from 127.0.0.1 to an upstream (the fake server or the real
service) and injects faults into them (``FaultProxy``): on command, or on the schedule of an
``--inject`` SPEC (``inject_spec``). Its pieces: the upstream request it dials
(``proxy_request``), its own certificate (``certs``, which the fake server uses too), a stall
made out of a healthy upstream's messages (``stall_filter``), recordings of what crosses it
(``recording``), reading the wire's JSON (``wire_json``), and pointing google-genai and
google-adk at it (``client_config``). The launcher's ``--inject`` starts it, and the test kit
builds on it. The fault proxy imports the rules, the conversation, compat, resumption and
observe: never the shell, launch or the test kit.
"""
