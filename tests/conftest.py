import pytest

# Quick mode (LABKIT_QUICK) is set for every run by the conftest.py at the repository root.


NO_GPU = ("llama.cpp sees no GPU device here ({why}); the gpu lane, .ci/gpu-lane, runs these "
          "tests under llama.cpp's Vulkan backend on a software GPU")
_gpu_reason: list = []


def _no_gpu_device() -> str | None:
    """Why the `gpu` tests cannot run in this process, or None: they need a llama.cpp that
    can offload and sees a GPU device (asked once per session)."""
    if not _gpu_reason:
        try:
            import llama_cpp
            from labkit.engine.devices import gpu_devices
            if not llama_cpp.llama_supports_gpu_offload():
                _gpu_reason.append(NO_GPU.format(why="a CPU build"))
            elif not gpu_devices():
                _gpu_reason.append(NO_GPU.format(why="an offloading build without a device"))
            else:
                _gpu_reason.append(None)
        except ImportError as exc:
            _gpu_reason.append(NO_GPU.format(why=exc))
    return _gpu_reason[0]


@pytest.fixture(autouse=True)
def _gpu_or_skip(request):
    """A test marked `gpu` runs only where llama.cpp sees a GPU device; elsewhere it skips,
    saying why."""
    if request.node.get_closest_marker("gpu"):
        why = _no_gpu_device()
        if why:
            pytest.skip(why)


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
