# A composite no codegen can generate yet (data movement: a bare transpose), for the tests of
# what a refused composite does to `partition -o` and `verify`.
patterns = [("cutlass.transpose", is_op("relax.permute_dims")(wildcard()))]
