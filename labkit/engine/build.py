"""What the llama.cpp in this process is: its version, whether it can offload, the compute
devices ggml registered, and the commit and compiler it was built from.

These are facts for a report (``labkit doctor``), read from llama.cpp itself: the binding's
``llama_supports_gpu_offload`` and ``llama_print_system_info``, ggml's device registry
(``ggml_backend_dev_*``) and the build constants of ``libllama-common``. Nothing here is
worded for a reader; :mod:`labkit.tools.doctor` chooses the words.
"""

from __future__ import annotations

import ctypes

import llama_cpp


def build_facts() -> dict:
    """The installed llama-cpp-python's version, GPU offload, devices, source and CPU features.

    ``devices`` names every device ggml registered (``NAME (description)``); ``gpu_devices``
    holds those it offloads to, with their memory (:mod:`labkit.engine.devices`);
    ``gpu_backends`` the GPU backends the build carries, registered or not.
    """
    from .devices import built_backends, devices
    info = llama_cpp.llama_print_system_info()
    info = info.decode(errors="replace") if isinstance(info, bytes) else str(info)
    found = devices()
    return {
        "version": getattr(llama_cpp, "__version__", None),
        "gpu_offload": bool(llama_cpp.llama_supports_gpu_offload()),
        "devices": [f"{d.name} ({d.description})" for d in found],
        "gpu_devices": [d.to_dict() for d in found if d.is_gpu],
        "gpu_backends": built_backends(),
        "llama_cpp_source": build_info(),
        "system_info": info.strip(),
    }


def build_info() -> dict | None:
    """The llama.cpp commit, compiler and target baked into ``libllama-common``.

    llama-cpp-python installs that library beside (or one level above) its package, or
    loads its libraries from $LLAMA_CPP_LIB_PATH (a llama.cpp build of your own); older
    builds lack it, and then this returns None.
    """
    from .devices import library_folders
    for folder in library_folders():
        for lib in sorted(folder.glob("*llama-common*")):
            try:
                h = ctypes.CDLL(str(lib))
                return {
                    "commit": ctypes.c_char_p.in_dll(h, "LLAMA_COMMIT").value.decode(),
                    "compiler": ctypes.c_char_p.in_dll(h, "LLAMA_COMPILER").value.decode(),
                    "target": ctypes.c_char_p.in_dll(h, "LLAMA_BUILD_TARGET").value.decode(),
                }
            except (OSError, ValueError, AttributeError):
                continue
    return None
