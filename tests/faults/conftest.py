"""The fault tests' summaries at the end of the run: every report that carries a
``fault_summary`` property (tests/faults/test_faults.py) is printed once, passed or failed."""

from __future__ import annotations

import pytest


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    shown: set[str] = set()
    for reports in terminalreporter.stats.values():
        for report in reports:
            for name, value in getattr(report, "user_properties", ()):
                if name == "fault_summary" and value and value not in shown:
                    shown.add(str(value))
    for text in sorted(shown):
        terminalreporter.write_sep("-", "fault injection summary")
        terminalreporter.write_line(text)
