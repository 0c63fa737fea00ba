"""The seed pattern table: offload every elementwise multiply to CUTLASS (spec/textual-ir.md E2)."""

patterns = [("cutlass.multiply", is_op("relax.multiply")(wildcard(), wildcard()))]
