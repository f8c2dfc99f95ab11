"""Builds one Python workload plugin into a component with componentize-py:

    python3 plugins/python/build.py PLUGIN_DIR WIT_DIR OUT.wasm

PLUGIN_DIR holds `app.py`; the SDK (plugins/python/sdk/blocklab.py, imported
as `blocklab`) is put on its Python path, one home for it in and out of the
tree. `--stub-wasi` replaces CPython's WASI imports (files, sockets) with
traps, so the component imports blocklab:bench only and needs no grant.
componentize-py is pinned in the Makefile (`make deps-python`);
`blocklab plugin build` runs this same script.
"""

import os
import sys


def main(argv):
    if len(argv) != 3:
        print("usage: python3 build.py PLUGIN_DIR WIT_DIR OUT.wasm", file=sys.stderr)
        return 2
    plugin, wit, out = (os.path.abspath(a) for a in argv)
    sdk = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sdk")
    try:
        import componentize_py
    except ImportError:
        print(
            f"error: componentize-py is not installed for `{sys.executable}`; run `make deps-python` in the blocklab tree",
            file=sys.stderr,
        )
        return 1
    os.makedirs(os.path.dirname(out), exist_ok=True)
    os.chdir(plugin)
    sys.argv = ["componentize-py", "-d", wit, "-w", "workload-plugin", "componentize", "--stub-wasi"]
    sys.argv += ["-p", plugin, "-p", sdk, "app", "-o", out]
    componentize_py.script()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
