import hashlib
import io

import pytest

from zoo.config import UserError
from zoo.data import fetch as fetch_module
from zoo.data.fetch import fetch, sha256_of

PAYLOAD = bytes(range(256)) * 4000  # about 1 MB: several read chunks


@pytest.fixture
def source(tmp_path):
    path = tmp_path / "remote.bin"
    path.write_bytes(PAYLOAD)
    return path


class FakeResponse(io.BytesIO):
    """A server response: `status`, `headers`, and optionally a failure after `fail_after` bytes."""

    def __init__(self, data: bytes, status: int, fail_after: int | None = None):
        super().__init__(data)
        self.status, self.headers, self.fail_after = status, {"Content-Length": str(len(data))}, fail_after

    def read(self, n=-1):
        if self.fail_after is not None:
            if self.tell() >= self.fail_after:
                raise ConnectionResetError("connection reset")
            n = min(n, self.fail_after - self.tell())
        return super().read(n)


def serve(monkeypatch, *, fail_after=None, honour_range=True):
    """Patch urlopen with a server of PAYLOAD; returns the list of Range headers it saw."""
    ranges = []

    def urlopen(request, timeout):
        header = request.get_header("Range")
        ranges.append(header)
        if header and honour_range:
            start = int(header.split("=")[1].rstrip("-"))
            return FakeResponse(PAYLOAD[start:], 206, fail_after)
        return FakeResponse(PAYLOAD, 200, fail_after)

    monkeypatch.setattr(fetch_module, "urlopen", urlopen)
    return ranges


def test_file_url_with_checksum(tmp_path, source):
    dest = tmp_path / "out" / "file.bin"
    digest = hashlib.sha256(PAYLOAD).hexdigest()
    assert fetch(source.as_uri(), dest, size=len(PAYLOAD), sha256=digest, progress=False) == dest
    assert dest.read_bytes() == PAYLOAD and sha256_of(dest) == digest
    assert not dest.with_name("file.bin.part").exists()


def test_existing_file_is_verified_not_downloaded(tmp_path, monkeypatch):
    dest = tmp_path / "file.bin"
    dest.write_bytes(PAYLOAD)
    ranges = serve(monkeypatch)
    fetch("https://example.org/file.bin", dest, sha256=hashlib.sha256(PAYLOAD).hexdigest())
    assert ranges == []
    with pytest.raises(UserError, match="delete it to download again"):
        fetch("https://example.org/file.bin", dest, size=1)


@pytest.mark.parametrize("kind", ["sha256", "size"])
def test_mismatch_removes_the_download(tmp_path, source, kind):
    dest = tmp_path / "file.bin"
    check = {"sha256": "0" * 64} if kind == "sha256" else {"size": len(PAYLOAD) + 1}
    with pytest.raises(UserError, match=f"{dest}: .*expected"):
        fetch(source.as_uri(), dest, progress=False, **check)
    assert not dest.exists() and not dest.with_name("file.bin.part").exists()


def test_interrupted_download_resumes_with_a_range_request(tmp_path, monkeypatch):
    dest = tmp_path / "file.bin"
    part = tmp_path / "file.bin.part"
    serve(monkeypatch, fail_after=300_000)
    with pytest.raises(UserError, match="run again to resume"):
        fetch("https://example.org/file.bin", dest, progress=False)
    assert not dest.exists() and part.read_bytes() == PAYLOAD[: part.stat().st_size]
    done = part.stat().st_size
    assert 0 < done < len(PAYLOAD)
    ranges = serve(monkeypatch)
    fetch("https://example.org/file.bin", dest, sha256=hashlib.sha256(PAYLOAD).hexdigest(), progress=False)
    assert ranges == [f"bytes={done}-"] and dest.read_bytes() == PAYLOAD


def test_server_without_ranges_starts_over(tmp_path, monkeypatch):
    dest = tmp_path / "file.bin"
    dest.with_name("file.bin.part").write_bytes(b"stale bytes")
    serve(monkeypatch, honour_range=False)
    fetch("https://example.org/file.bin", dest, progress=False)
    assert dest.read_bytes() == PAYLOAD


def test_unreachable_url_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="download failed"):
        fetch((tmp_path / "missing.bin").as_uri(), tmp_path / "x.bin", progress=False)
