"""labkit: a workbook that teaches continuous batching on llama.cpp by measuring it."""

__version__ = "0.1.0"
