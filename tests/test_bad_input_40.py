"""Bad-input campaign 40, and the smaller notes campaign 39 left. Each test below failed on the code
before its fix:
- a scalar where a section of keys belongs was refused in pydantic's words, naming its own class
  ("a valid dictionary or instance of PrefixCacheSettings"), a name no user wrote.
"""
from __future__ import annotations

import pytest

from tests.test_bad_input import one_line_error, run
from tests.test_bad_input_38 import BASE


@pytest.mark.parametrize("key, value", [("workload", "5"), ("engine.prefix_cache", "3"), ("engine.batch_wait", "true"),
                                        ("verify", "[1, 2]"), ("cost", "x"), ("parallel", "8")])
def test_a_scalar_where_a_section_belongs_names_no_class(tmp_path, capsys, key, value):
    line = one_line_error(capsys, ["cost", run(tmp_path, BASE)[1], "--set", f"{key}={value}"], key, "section of keys")
    assert "instance of" not in line
