"""The cuBLAS backend: pattern table and check function (``patterns``).

Importing this package registers nothing; the registry loads the table on first use."""
