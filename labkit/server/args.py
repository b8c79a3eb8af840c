"""llama-server's command-line flags, parsed once for every server labkit starts.

labkit's own server and the reference llama-server (from the xllamacpp wheel)
take the same flags, so the seed tutorial's command lines work on both:

    -m MODEL --alias local --host 127.0.0.1 --port 8080 -c 16384 -np 4 --no-kv-unified
    -b 512 -ub 128 -ctk f16 -ctv f16 -fa auto -ngl 0 --metrics --slots

The flags, their defaults and their checks come from :data:`labkit.settings.TABLE`.
"""

from __future__ import annotations

import argparse

from .. import settings


def build_parser(prog: str = "labkit serve") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog, description="A continuous-batching slot server that speaks llama-server's API.")
    settings.add_arguments(p)
    return p


def parse_args(argv=None, prog: str = "labkit serve", *,
               llama_server: bool = False) -> argparse.Namespace:
    """Parse and check a command line; a bad value exits with status 2 and one line naming
    the setting, the value and what is allowed. labkit's server (``llama_server=False``)
    refuses llama-server's own settings (``--cache-ram``) the same way."""
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    try:
        settings.check_all(args)
        if not llama_server:
            settings.refuse_llama_server_only(args)
    except settings.SettingError as exc:
        parser.error(str(exc))
    return args
