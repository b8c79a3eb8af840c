"""The machine the workbook runs on: the run environment (quick mode, results folder, threads,
language) and the GPUs. Nothing here imports another part of labkit."""
