"""Prepare benchmarks/gpu/carry/: what a GPU machine without network needs beside this tree.

    python benchmarks/gpu/pack.py            # writes benchmarks/gpu/carry/, prints its size

The folder holds, in under 64 MiB with the rest of the working tree:

- ``llama.cpp.tar.xz``: the llama.cpp sources the installed llama-cpp-python was built from
  (vendored in its source distribution), trimmed to what CMake needs for ggml (CPU and
  CUDA backends), libllama, libmtmd, the common library and the tools, llama-server among
  them: no model files, tests, docs, web-UI sources or other GPU backends;
- ``python/``: llama-cpp-python's Python package from the same source distribution (no
  compiled library: run.py points it at the CUDA build with ``LLAMA_CPP_LIB_PATH``), with
  its version record so ``labkit doctor`` can name it;
- ``wheels/``: the pure-Python wheels labkit needs that the GPU image lacks (``gguf``,
  ``diskcache``, ``starlette``, ``uvicorn``), at the versions installed here;
- ``tokenizer.gguf``: the embedded model's tokenizer alone (about 2 MB), from which
  synthetic models are written there (the 98 MB embedded model stays behind);
- ``manifest.json``: versions, the llama.cpp commit, sizes.

The source distribution comes from ``~/.cache/labkit/llama.cpp-<version>/sdist/`` (where
build_llama_server.sh keeps it) or is fetched there with ``pip download``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from importlib import metadata
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
LIMIT = 64 * 2**20
# Pure-Python packages labkit imports on the GPU machine that its image does not have.
WHEELS = ("gguf", "diskcache", "starlette", "uvicorn")
# Pieces of the llama.cpp tree CMake never reads for ggml (CPU, CUDA) + llama + tools.
DROP_DIRS = re.compile(
    r"^(models|docs|media|tests|examples|pocs|benches|gguf-py|conversion|requirements|ci|"
    r"skills|grammars|\.github|\.devops|tools/server/tests|tools/ui/(src|tests|static|scripts)|"
    r"ggml/src/ggml-(?!(cpu|cuda)(/|$))[^/.]+)(/|$)")
DROP_FILES = re.compile(r"(\.(md|mp4|png|jpg|gguf|py|ipynb)|package-lock\.json)$")
KEEP_SCRIPTS = re.compile(r"^scripts/[^/]+\.cmake$")

sys.path.insert(0, str(REPO))


def version() -> str:
    import llama_cpp
    return llama_cpp.__version__


def sdist(ver: str) -> Path:
    root = Path(os.environ.get("LABKIT_CACHE", Path.home() / ".cache" / "labkit"))
    folder = root / f"llama.cpp-{ver}" / "sdist"
    found = sorted(folder.glob(f"llama_cpp_python-{ver}.tar.gz"))
    if found:
        return found[0]
    folder.mkdir(parents=True, exist_ok=True)
    print(f"fetching llama-cpp-python {ver}'s source distribution into {folder}", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                    "--no-binary", ":all:", f"llama-cpp-python=={ver}", "-d", str(folder)],
                   check=True)
    return next(folder.glob(f"llama_cpp_python-{ver}.tar.gz"))


def keep(rel: str) -> bool:
    """Is this path (relative to vendor/llama.cpp) needed to configure and build?"""
    if rel.startswith("scripts/"):
        return bool(KEEP_SCRIPTS.match(rel))
    if DROP_DIRS.match(rel):
        return False
    return not DROP_FILES.search(rel)


def pack_sources(src: tarfile.TarFile, prefix: str, out: Path) -> tuple[int, int]:
    """Write the trimmed llama.cpp tree as out (tar.xz); return (files kept, files dropped)."""
    kept = dropped = 0
    base = f"{prefix}/vendor/llama.cpp/"
    with tarfile.open(out, "w:xz", preset=9) as dst:
        for m in src:
            if not m.name.startswith(base) or not (m.isfile() or m.isdir()):
                continue
            rel = m.name[len(base):]
            if not rel or not keep(rel):
                dropped += m.isfile()
                continue
            m2 = tarfile.TarInfo("llama.cpp/" + rel)
            m2.size, m2.mode, m2.mtime = m.size, m.mode, m.mtime
            m2.type = m.type
            dst.addfile(m2, src.extractfile(m) if m.isfile() else None)
            kept += m.isfile()
    return kept, dropped


def pack_python(src: tarfile.TarFile, prefix: str, ver: str, out: Path) -> None:
    """llama-cpp-python's Python files (not its server, not a compiled library) + dist-info."""
    pkg = out / "llama_cpp"
    for m in src:
        rel = m.name[len(prefix) + 1:]
        if m.isfile() and rel.startswith("llama_cpp/") and not rel.startswith("llama_cpp/server/"):
            target = out / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(src.extractfile(m).read())
    info = out / f"llama_cpp_python-{ver}.dist-info"
    info.mkdir()
    info.joinpath("METADATA").write_bytes(src.extractfile(f"{prefix}/PKG-INFO").read())
    info.joinpath("top_level.txt").write_text("llama_cpp\n")
    assert (pkg / "llama_cpp.py").is_file()


def download_wheels(out: Path) -> list[str]:
    pins = [f"{name}=={metadata.version(name)}" for name in WHEELS]
    plat = []
    for p in ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64"):
        plat += ["--platform", p]
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                    "--only-binary=:all:", "--python-version", "3.12", "--implementation", "cp",
                    *plat, "-d", str(out), *pins], check=True)
    return pins


def tree_bytes() -> int:
    """What travels besides the carry folder: tracked and untracked-not-ignored files."""
    names = subprocess.run(["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=REPO,
                           capture_output=True, check=True).stdout.split(b"\0")
    return sum((REPO / n.decode()).stat().st_size for n in names
               if n and (REPO / n.decode()).is_file())


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(HERE / "carry"), help="the carry folder to (re)write")
    args = ap.parse_args(argv)
    out = Path(args.out)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    ver = version()
    tarball = sdist(ver)
    with tarfile.open(tarball) as src:
        prefix = src.getmembers()[0].name.split("/")[0]
        kept, dropped = pack_sources(src, prefix, out / "llama.cpp.tar.xz")
    with tarfile.open(tarball) as src:
        pack_python(src, prefix, ver, out / "python")
    pins = download_wheels(out / "wheels")
    from labkit.models import synthetic
    from labkit.engine.build import build_facts
    synthetic.write_tokenizer(out / "tokenizer.gguf")
    build = build_facts()
    manifest = {
        "llama_cpp_python": ver, "llama_cpp_commit": (build.get("llama_cpp_source") or {})
        .get("commit"), "sdist": tarball.name, "source_files": kept, "dropped_files": dropped,
        "wheels": pins, "tokenizer": str(synthetic.tokenizer_source()),
        "sizes": {p.name: folder_bytes(p) if p.is_dir() else p.stat().st_size
                  for p in sorted(out.iterdir())}}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    carry, tree = folder_bytes(out), tree_bytes()
    for name, size in manifest["sizes"].items():
        print(f"  {name:<20} {size / 2**20:7.2f} MiB")
    print(f"carry {out}: {carry / 2**20:.2f} MiB; working tree {tree / 2**20:.2f} MiB; "
          f"together {(carry + tree) / 2**20:.2f} MiB of {LIMIT / 2**20:.0f} MiB")
    if carry + tree > LIMIT:
        print("too big to carry to the GPU machine", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
