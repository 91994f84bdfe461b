"""The event types and one pydantic payload per type: what an event's `data` holds.

`EventBus.emit` refuses data its type's payload does not describe (an unknown key, a wrong
type, a required key left out), and `Event.read` gives a reader the payload's typed fields, so
a key one side names and the other lacks fails where it is sent, never "until None" where it is
read. Writing is strict; reading is lenient: an old log's keys a payload no longer knows are
passed over.

`kinds.py` holds the types and the base, `run.py` and `reasoning.py` the payloads, `catalog.py`
the payload of each type. This package's own module imports nothing: `akira_cli.events` imports
`kinds` alone, and `catalog` at the first event sent, so `akira loop status` (which imports the
events for their time stamps) defines no payload, and none is built before its first use
(`defer_build`)."""
