"""The CUTLASS backend: pattern table (``patterns``) and its check functions (``checks``).

Importing this package registers nothing; the registry loads the table on first use."""
