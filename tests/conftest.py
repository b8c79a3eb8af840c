import pytest

# Quick mode (LABKIT_QUICK) is set for every run by the conftest.py at the repository root.


@pytest.fixture(scope="session")
def model_path():
    from labkit.models.files import default_model_path
    return str(default_model_path())


class ServerPool:
    """Servers shared by the tests that only talk to them, keyed by their flags.

    ``get(kinds, **settings)`` gives one server of each kind started with the same
    :class:`labkit.server.launch.ServerConfig` settings, started the first time those are asked for.
    Asking for other settings stops the running servers first, so at most one flag set's
    servers run at a time; tests that ask for the same flag set one after another share them.
    """

    def __init__(self):
        self.key: tuple | None = None
        self.servers: dict = {}

    def get(self, kinds, **settings) -> dict:
        """{kind: running server}, all started with ``settings``."""
        from labkit.server.launch import ServerConfig, start
        key = (tuple(kinds), tuple(sorted(settings.items())))
        if key != self.key:
            self.close()
            for kind in kinds:
                self.servers[kind] = start(ServerConfig(kind=kind, **settings))
            self.key = key
        return self.servers

    def close(self) -> None:
        for srv in self.servers.values():
            srv.stop()
        self.servers, self.key = {}, None


POOL = pytest.StashKey[ServerPool]()
LAST_POOL_USER = pytest.StashKey[object]()


@pytest.fixture(scope="session")
def server_pool(request):
    """The session's :class:`ServerPool`; its servers stop after the last test that uses it."""
    pool = request.config.stash[POOL] = ServerPool()
    try:
        yield pool
    finally:
        pool.close()


def pytest_collection_finish(session):
    users = [item for item in session.items if "server_pool" in getattr(item, "fixturenames", ())]
    session.config.stash[LAST_POOL_USER] = users[-1] if users else None


def pytest_runtest_teardown(item, nextitem):
    """Stop the pool's servers once no later test will talk to them (not at the end of the
    session, which would leave them running beside every test after the last user)."""
    if item is item.config.stash.get(LAST_POOL_USER, None) and POOL in item.config.stash:
        item.config.stash[POOL].close()
