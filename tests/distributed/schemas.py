"""JSON-schema validation of the peat tool's output for the distributed tests
(docs/schemas/*.schema.json, with their shared definitions)."""
import json
import pathlib

import jsonschema


def schema_error(doc, schema_dir, name):
    """None when `doc` matches docs/schemas/`name`, else the message."""
    store = {}
    for f in pathlib.Path(schema_dir).glob("*.schema.json"):
        s = json.loads(f.read_text())
        store[s["$id"]] = s
        store[f.name] = s
    schema = store[name]
    resolver = jsonschema.RefResolver(base_uri=schema["$id"], referrer=schema, store=store)
    try:
        jsonschema.Draft7Validator(schema, resolver=resolver).validate(doc)
    except jsonschema.ValidationError as e:
        return f"JSON does not match {name}: {e.message} at {list(e.path)}"
    return None
