"""Pure parsers: tool output text -> typed records. No I/O; errors raise fabcheck.errors.ParseError."""
