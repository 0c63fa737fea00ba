"""byocc: bring-your-own-codegen partitioning of Relax tensor programs, TVM 0.27-exact."""

__version__ = "0.1.0"
