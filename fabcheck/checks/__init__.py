"""Pure checks: typed records + fabric intent -> findings with expected, actual and a hint."""
