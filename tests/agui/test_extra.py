"""Without the extra, ``ark.agui`` says how to get it (DESIGN §18: never needed by default)."""

from __future__ import annotations

import subprocess
import sys


def test_without_ag_ui_protocol_the_error_names_the_extra():
    code = ("import sys; sys.modules['ag_ui'] = None\n"
            "import arknb as ark\n"
            "try:\n"
            "    ark.agui\n"
            "except ark.ArkError as exc:\n"
            "    print(exc.code, '|', exc.message)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.startswith("agui_unavailable | ") and "pip install 'arknb[agui]'" in out


def test_importing_arknb_and_loading_the_extension_does_not_start_any_server():
    code = ("import sys, arknb\n"
            "from IPython.testing.globalipapp import get_ipython\n"
            "ip = get_ipython(); ip.run_line_magic('load_ext', 'arknb')\n"
            "print(sorted(m for m in ('arknb.agui', 'uvicorn', 'ag_ui') if m in sys.modules))\n"
            "print('chat' in ip.magics_manager.magics['cell'], 'arknb' in ip.magics_manager.magics['line'])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["[]", "True True"]
