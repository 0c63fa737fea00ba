# A composite no codegen generates (a reduction: a bare softmax; transposes and other data
# movement get code since issue 19), for the tests of what a refused composite does to
# `partition -o` and `verify`.
patterns = [("cutlass.softmax", is_op("relax.nn.softmax")(wildcard()))]
