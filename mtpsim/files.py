"""Reading the files users hand us (scenarios, catalog entries, profile tables and meta, traces,
histograms) under one set of rules, so a bad file is one ScenarioError and never a traceback,
a hang or a silently odd number.

Every file:
- is at most MAX_FILE_BYTES (after gunzipping a `.gz`), so nothing reads the machine's memory away;
- is UTF-8 text without NUL bytes; a binary file is called binary.

YAML (`load_yaml`, `parse_yaml`):
- safe constructors only: a custom or `!!python` tag is an error, never code;
- a duplicate key is an error naming its dotted key path (YAML would keep the last silently);
- nesting is at most MAX_DEPTH levels and aliases may expand to at most MAX_VALUES values (an
  alias bomb is refused before anything walks it);
- floats follow YAML 1.2 as well as 1.1: `1e9` and `989e12` are numbers, not strings.

CSV (`read_csv`): required columns, numbers where the `Column` rules say so (finite, integer
where counts belong, within range; `True` is not a number), at most MAX_ROWS rows, never empty.

Error messages quote at most 80 characters of a value (`short`).

Outputs have their own rule: mtpsim/outputs.py `writing` (re-exported here).

The rules live by level: textfiles.py (bytes and text), yamlfiles.py, csvfiles.py; this module
gathers their names, which callers import from here.
"""
from mtpsim.csvfiles import (  # noqa: F401 (the CSV reader, read from here)
    COUNT,
    MAX_ROWS,
    NON_NEGATIVE,
    POSITIVE,
    TEXT,
    Column,
    check_numbers,
    file_row,
    first_repeat_rows,
    read_csv,
)
from mtpsim.jsonfiles import strict_json  # noqa: F401 (the JSON reader, read from here)
from mtpsim.outputs import writing  # noqa: F401 (callers of mtpsim.files.writing keep working)
from mtpsim.textfiles import (  # noqa: F401 (the byte-level reader, read from here)
    MAX_FILE_BYTES,
    READ_ERRORS,
    not_a_file,
    read_bytes,
    read_once,
    read_text,
    require_file,
    unreadable,
    version,
)
from mtpsim.yamlfiles import (  # noqa: F401
    MAX_DEPTH,
    MAX_VALUES,
    MAX_YAML_BYTES,
    dump_yaml_all,
    load_yaml,
    load_yaml_documents,
    parse_yaml,
)
