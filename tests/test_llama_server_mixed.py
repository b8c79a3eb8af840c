"""labkit.lessons.llama_server.mixed_reading: what the long-and-short mix shows on each server,
said from its numbers (notebook 06 §1 runs the servers; these rows are written by hand)."""

import pandas as pd

from labkit.lang.choice import use_language
from labkit.lessons.llama_server import mixed_reading


def _rows(server, on, off):
    """(first_token_s, finish_s) of the long request then three short ones, each way."""
    rows = []
    for cb, times in ((True, on), (False, off)):
        for i, (first, end) in enumerate(times):
            rows.append({"server": server, "cont_batching": cb, "request": i,
                         "first_token_s": first, "finish_s": end, "error": None})
    return rows


def test_the_round_is_read_off_the_clock():
    use_language("en")
    table = pd.DataFrame(
        _rows("llama-server (xllamacpp 1)", [(0.1, 2.6), (0.3, 0.5), (0.7, 0.9), (1.0, 1.2)],
              [(0.1, 1.9), (2.1, 2.3), (2.1, 2.3), (2.4, 2.55)])
        + _rows("labkit server 0.1.0", [(0.1, 2.0), (0.3, 0.5), (0.5, 0.7), (0.7, 0.9)],
                [(0.1, 2.0), (0.3, 0.5), (0.5, 0.7), (0.7, 0.9)]))
    (ls, _), (lk, _) = mixed_reading(table)
    assert ls.startswith("llama-server (xllamacpp 1): slowest short request finished at 1.20 s")
    assert "2.55 s without (x2.12)" in ls and "waited for the round" in ls
    assert "started before the long one ended" in lk and "waited" not in lk


def test_a_failed_request_gets_no_reading():
    table = pd.DataFrame(_rows("s", [(0.1, 1.0)] * 4, [(0.1, 1.0)] * 4))
    table.loc[2, "error"] = "HTTP 500"
    en, zh = mixed_reading(table)[0]
    assert "failed; no reading" in en and "無法解讀" in zh
