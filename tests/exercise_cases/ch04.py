"""Plausible wrong answers to the exercises of notebook 04: each must fail with a hint."""


def _divides_without_padding(c, np, unified, n_ctx_train):
    return min(c if unified else c // np, n_ctx_train)


def _forgets_the_training_cap(c, np, unified, n_ctx_train):
    pad = lambda n: -(-n // 256) * 256      # noqa: E731
    pool = pad(c or n_ctx_train)
    return pool if unified else pad(pool // np)


def _forgets_minus_c_zero(c, np, unified, n_ctx_train):
    pad = lambda n: -(-n // 256) * 256      # noqa: E731
    pool = pad(max(c, 1))
    return min(pool if unified else pad(pool // np), n_ctx_train)


def _raises(c, np, unified, n_ctx_train):
    return c / 0


WRONG = {
    "4.1": [16384, 4096, "16384 格"],
    "4.2": [(1024, 341), (1000, 333), (1024, 512), 1536],
    "4.3": [(1, False, 8192), (4, False, 2048), (4, True, 2048), (4, "分割", 8192),
            (4, "split", 2048), ("一", "統一", 8192), (4, "統一", 2048)],
    "4.7": [4, 3, "四個", "3 個"],
    "4.4": [(8192, 4096), (1536, 4096), (6144, 6144), (6144, 1536), ("8192 格", "4096 格")],
    "4.5": [512, 128, 4, 1, "512 個", "兩百"],
    "4.8": ["they wait", "等待", "newest fails", "一個失敗", "截斷", "最新的請求失敗", "排隊",
            "都會變慢"],
    "4.6": [_divides_without_padding, _forgets_the_training_cap, _forgets_minus_c_zero,
            _raises, lambda c, np, unified, n_ctx_train: float(c)],
    "4.9": ["unified",
            "I would choose unified KV because it is more flexible for the team and shares the "
            "memory between the agents and the long document, so nobody is refused and the "
            "memory is used well; when the pool runs out the server will simply slow down and "
            "everyone waits a little longer for their answers.",
            "選統一 KV，比較有彈性，大家共用記憶體。"],
    "4.10": [2000, 2048, 8000, "2048 格", 6144],
}
