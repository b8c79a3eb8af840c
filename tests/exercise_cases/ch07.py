"""Plausible wrong answers to the exercises of notebook 07: each must fail with a hint.

7.5's wrong answers are key functions ``key(request, now)``: shortest first without aging (the
long requests starve), arrival order (the short answers wait behind everyone), aging so fast it
is almost arrival order, aging the wrong way, the priority label alone, and a key that cannot be
compared."""


def _sjf(request, now):
    return request.expected


def _fifo(request, now):
    return request.arrival


def _ages_too_fast(request, now):
    return request.expected - 200 * (now - request.arrival)


def _ages_backwards(request, now):
    return request.expected + 20 * (now - request.arrival)


def _label_only(request, now):
    return -request.priority


def _not_comparable(request, now):
    return "short" if request.expected < 100 else 600


WRONG = {
    "7.1": ["fifo", "fair", "FIFO", "先進先出", "公平分享", "先來先服務", "優先級"],
    "7.2": ["priority", "fifo", "sjf", "最短作業優先", "優先級", "先來先服務"],
    "7.5": [6, 8, 0, "6 個", "8 個請求"],
    "7.6": ["up", "higher", "上升", "變快"],
    "7.3": [_sjf, _fifo, _ages_too_fast, _ages_backwards, _label_only, _not_comparable,
            lambda request: request.expected, 42],
    "7.7": [4, 6, 8, "4 個", "8 個請求"],
    "7.4": ["aging", "I would use aging because it is better for everyone on the server.",
            "Aging is the best policy because the short answers stay quick and the long ones "
            "are served in time, so nobody starves and everyone is happy with the service.",
            "老化", "我會用老化策略，因為短回答可以維持快速，長報告也能在門檻之內及時服務，沒有任何請求會餓死，團隊裡每個人都會滿意。"],
}
