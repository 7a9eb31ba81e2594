"""CTranslate2 in a process of its own, for timing beside torch.

torch and CTranslate2 each bring their own OpenMP runtime (two copies of libgomp). In one process,
once torch has run a parallel operation, the two thread pools fight over the cores: on this 2-core
machine CTranslate2 with 2 intra threads decoded GPT mini at batch 1 at 279 tokens/s, against
1,268 alone, 1,248 with torch imported but idle, and 1,166 through `Remote` from a process where
torch had run (`python -m bench.ct2_colocation`: bench/results/ct2_colocation.md; an earlier run
of the same command: 226 against 791, 825 and 796). At one thread neither
pool has workers. So the benches drive CTranslate2 through `Remote`: a child process (`python -m
bench.ct2_process`, which imports ctranslate2 and never torch) that holds the model and answers
method calls over a pipe. A call costs a pipe round trip and the pickling of its arguments and
results on top: ~0.4 ms (GPT mini, one new id: 2.55 ms in this process, 2.93 ms through `Remote`,
one thread). Decode rates, the full call minus the one-id call, cancel it; prefill rates and
whole calls carry it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from multiprocessing.connection import Connection
from pathlib import Path
from types import SimpleNamespace

import numpy as np

# What the benches read of a GenerationResult or TranslationResult.
RESULT_FIELDS = ("sequences", "sequences_ids", "hypotheses", "scores")
# What they read of an Encoder's EncoderForwardOutput, as numpy arrays (a StorageView does not pickle).
ENCODER_FIELDS = ("last_hidden_state", "pooler_output")


class Remote:
    """A `ctranslate2.Generator`, `ctranslate2.Translator` or `ctranslate2.Encoder` (`kind`)
    built in a child process with `path` and `options`; `generate_batch` and `translate_batch`
    return lists of namespaces holding RESULT_FIELDS, `forward_batch` a namespace of
    ENCODER_FIELDS."""

    def __init__(self, kind: str, path: str, **options) -> None:
        child_reads, parent_writes = os.pipe()
        parent_reads, child_writes = os.pipe()
        command = [sys.executable, "-m", "bench.ct2_process", str(child_reads), str(child_writes)]
        root = Path(__file__).resolve().parents[1]  # where `bench` imports from
        self._process = subprocess.Popen(command, pass_fds=(child_reads, child_writes), cwd=root)
        os.close(child_reads)
        os.close(child_writes)
        self._send = Connection(parent_writes, readable=False)
        self._receive = Connection(parent_reads, writable=False)
        try:
            self._call("__init__", kind, path, options)
        except RuntimeError:
            self.close()
            raise

    def _call(self, method: str, *args, **kwargs):
        self._send.send((method, args, kwargs))
        ok, answer = self._receive.recv()
        if not ok:
            raise RuntimeError(f"CTranslate2 in its process: {answer}")
        return answer

    def generate_batch(self, *args, **kwargs) -> list[SimpleNamespace]:
        return self._call("generate_batch", *args, **kwargs)

    def translate_batch(self, *args, **kwargs) -> list[SimpleNamespace]:
        return self._call("translate_batch", *args, **kwargs)

    def forward_batch(self, *args, **kwargs) -> SimpleNamespace:
        return self._call("forward_batch", *args, **kwargs)

    def forward_batch_untransferred(self, *args, **kwargs) -> None:
        """`forward_batch` with its outputs left in the child, for timing: an encoder's hidden
        states are large (32 x 128 x 384 floats, 6 MB), and pickling them through the pipe would
        add to the engine's time what an in-process caller never pays."""
        self._call("forward_batch_untransferred", *args, **kwargs)

    def close(self) -> None:
        """Ends the child (it also ends when this process does: its pipe closes)."""
        self._send.close()
        self._process.wait()


def _plain(result) -> SimpleNamespace:
    return SimpleNamespace(**{name: getattr(result, name) for name in RESULT_FIELDS if hasattr(result, name)})


def _answer(engine, method: str, args: tuple, kwargs: dict):
    """What the engine's `method` returns, in a form that pickles."""
    if method == "forward_batch_untransferred":
        engine.forward_batch(*args, **kwargs)
        return None
    if method == "forward_batch":
        output = engine.forward_batch(*args, **kwargs)
        arrays = {name: getattr(output, name) for name in ENCODER_FIELDS}
        return SimpleNamespace(**{name: None if a is None else np.array(a) for name, a in arrays.items()})
    return [_plain(r) for r in getattr(engine, method)(*args, **kwargs)]


def serve(receive: Connection, send: Connection) -> None:
    """The child's loop: build the engine, then answer calls until the parent's pipe closes."""
    import ctranslate2

    engine = None
    while True:
        try:
            method, args, kwargs = receive.recv()
        except EOFError:
            return
        try:
            if method == "__init__":
                kind, path, options = args
                engine = getattr(ctranslate2, kind)(path, **options)
                send.send((True, None))
            else:
                send.send((True, _answer(engine, method, args, kwargs)))
        except Exception as err:  # reported in the parent, which raises it
            send.send((False, f"{type(err).__name__}: {err}"))


if __name__ == "__main__":
    serve(Connection(int(sys.argv[1]), writable=False), Connection(int(sys.argv[2]), readable=False))
