"""Signals during a blocked write: the JSON stream never carries a broken line.

A signal that lands while a record's write to a full pipe blocks makes the write partial, and the
rest of the record could be dropped; the writer defers SIGINT/SIGTERM until a record is out.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

WRITER = """
import signal, sys
signal.signal(signal.SIGINT, lambda *_: None)  # like the session's: only asks it to stop
from sectormon.io.stream import JsonStream
stream = JsonStream(sys.stdout)
print("ready", file=sys.stderr, flush=True)
for i in range(int(sys.argv[1])):
    stream._write({"i": i, "pad": "x" * 10_400})
"""


def test_records_survive_signals_while_the_pipe_is_full() -> None:
    records = 150
    child = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(records)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert child.stdout is not None and child.stderr is not None
    assert child.stderr.readline() == b"ready\n"
    done = threading.Event()

    def pester() -> None:  # a signal every millisecond while the writer blocks on the full pipe
        while not done.is_set():
            try:
                os.kill(child.pid, signal.SIGINT)
            except ProcessLookupError:
                return
            time.sleep(0.001)

    pesterer = threading.Thread(target=pester)
    pesterer.start()
    chunks = []
    try:
        while True:
            chunk = child.stdout.read(3000)  # slowly: the pipe stays full, writes block
            if not chunk:
                break
            chunks.append(chunk)
            time.sleep(0.0005)
    finally:
        done.set()
        pesterer.join()
        child.wait()
    lines = b"".join(chunks).decode().splitlines()
    assert [json.loads(line)["i"] for line in lines] == list(range(records))
