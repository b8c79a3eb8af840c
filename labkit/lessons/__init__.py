"""Helpers the lessons use, grouped by kind: live runs on labkit's server or engine (`live`), runs
on llama.cpp's own server beside labkit's (`llama_server`), the hand-built batcher's companions
(`handbuilt`), the seeds' tables recomputed (`seed_tables`), a scripted stand-in server
(`scripted_server`), interactive panels (`widgets`), pictures (`plots`) and the classroom's
merged worksheets (`classroom`). Notebooks reach them through :mod:`labkit.notebook`."""
