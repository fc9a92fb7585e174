"""The notebook client, served by the grader itself as a wheel, so that a student installs
the client that matches their course's grader with one line in a notebook:

    %pip install https://grader.example.edu/client/grader_client-0.1.0-py3-none-any.whl

The wheel is built here from client/grader_client.py (one module, the standard library
only): a zip of the module and its metadata, as the wheel format describes it."""

from __future__ import annotations

import base64
import functools
import hashlib
import io
import re
import zipfile
from pathlib import Path

from flask import abort, redirect, send_file, url_for

from grader.web import bp

CLIENT = Path(__file__).resolve().parents[2] / "client" / "grader_client.py"
_WHEEL = "grader_client-{version}-py3-none-any.whl"


@functools.cache
def wheel() -> tuple[str, bytes]:
    """(the wheel's file name, its bytes), built once."""
    module = CLIENT.read_bytes()
    version = re.search(rb'^__version__ = "([0-9.]+)"$', module, re.M).group(1).decode()
    info = f"grader_client-{version}.dist-info"
    files = {
        "grader_client.py": module,
        f"{info}/METADATA": (f"Metadata-Version: 2.1\nName: grader-client\nVersion: {version}\n"
                             "Summary: Submit autograd exercises to the grader from Jupyter, Colab or a terminal\n"
                             "Requires-Python: >=3.8\n").encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: grader\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{name},sha256={_digest(data)},{len(data)}\n" for name, data in files.items())
    files[f"{info}/RECORD"] = (record + f"{info}/RECORD,,\n").encode()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0)), data,
                             compress_type=zipfile.ZIP_DEFLATED)
    return _WHEEL.format(version=version), out.getvalue()


def _digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def wheel_url() -> str | None:
    """Where the client's wheel is served, for pages that show how to install it."""
    if not CLIENT.is_file():
        return None
    return url_for("web.client_wheel", name=wheel()[0], _external=True)


@bp.get("/client/")
def client_latest():
    if not CLIENT.is_file():
        abort(404)
    return redirect(url_for("web.client_wheel", name=wheel()[0]))


@bp.get("/client/<name>")
def client_wheel(name: str):
    if not CLIENT.is_file() or name != wheel()[0]:
        abort(404)
    filename, data = wheel()
    return send_file(io.BytesIO(data), mimetype="application/zip", as_attachment=True, download_name=filename,
                     max_age=3600)
