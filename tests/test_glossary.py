from pathlib import Path

import pytest

from labkit import glossary


def test_docs_glossary_is_generated_from_the_package():
    doc = Path(__file__).resolve().parents[1] / "docs" / "GLOSSARY.md"
    assert doc.read_text() == glossary.markdown(), \
        "regenerate: python -c \"from labkit import glossary; " \
        "open('docs/GLOSSARY.md','w').write(glossary.markdown())\""


def test_seed_terms_keep_their_chinese_names():
    assert glossary.lookup("slot").chinese == "窗口"
    assert glossary.lookup("context").chinese == "桌面"
    assert glossary.lookup("KV cache").chinese == "已讀筆記"
    assert glossary.lookup("窗口").english == "slot"
    with pytest.raises(KeyError):
        glossary.lookup("flux capacitor")
