"""The `mem` command line: parsing, output and exit codes over the Memory API."""
