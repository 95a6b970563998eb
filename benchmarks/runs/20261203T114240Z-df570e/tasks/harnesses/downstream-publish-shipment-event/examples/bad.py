import json
import sqlite3


def publish_shipment_event(store, shipment_id, event_type, payload, expected_version):
    db = sqlite3.connect("var/events.db")
    db.execute("INSERT INTO events VALUES (?, ?, ?, ?)",
               (str(shipment_id), expected_version + 1, event_type, json.dumps(payload)))
    return expected_version + 1
